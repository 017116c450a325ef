#include "notify/notification.h"

#include <boost/json.hpp>

#include "base/json.h"
#include "diagnose/sql_functions.h"

namespace tw::notify {

namespace json = boost::json;

diagnose::Severity Notification::level() const {
  diagnose::Severity l = diagnose::Severity::kWarning;
  diagnose::ParseSeverity(severity, &l);
  return l;
}

namespace {

// A run event's payload: {"version":1,"type":"run.finished","time":...,"run":{...},"sparkline":...}.
std::string RunPayload(const Notification& n, std::string_view link) {
  Json r;
  r.Num("event_id", static_cast<double>(n.run_event_id)).Str("event", n.event).Str("name", n.run)
      .Str("state", n.state).Str("severity", n.severity).Str("title", n.title).Str("message", n.message)
      .Str("how", n.cause).Str("advice", n.fix);
  if (n.last_step) r.Num("last_step", static_cast<double>(*n.last_step));
  else r.Raw("last_step", "null");
  r.Raw("fields", n.evidence.empty() ? "{}" : n.evidence).Raw("summary", n.run_summary.empty() ? "{}" : n.run_summary);
  Json j;
  j.Num("version", 1).Str("type", n.event).Num("time", n.time).Nested("run", r).Str("sparkline", n.sparkline);
  if (!link.empty()) j.Str("link", std::string(link));
  return j.str();
}

}  // namespace

std::string ToPayload(const Notification& n, std::string_view link) {
  if (n.is_run_event()) return RunPayload(n, link);
  Json f;
  auto opt = [&](const char* key, const std::optional<int64_t>& v) {
    if (v) f.Num(key, static_cast<double>(*v));
    else f.Raw(key, "null");
  };
  f.Num("id", static_cast<double>(n.finding_id)).Str("rule", n.rule).Str("title", n.title)
      .Str("severity", n.severity).Str("state", n.state).Str("run", n.run).Str("series", n.series);
  opt("onset_step", n.onset_step);
  opt("first_step", n.first_step);
  opt("last_step", n.last_step);
  f.Str("message", n.message).Str("cause", n.cause).Str("fix", n.fix)
      .Raw("evidence", n.evidence.empty() ? "{}" : n.evidence).Num("first_seen", n.first_seen);
  Json j;
  j.Num("version", 1).Str("type", n.event).Num("time", n.time).Nested("finding", f)
      .Str("sparkline", n.sparkline);
  if (!link.empty()) j.Str("link", std::string(link));
  return j.str();
}

namespace {

std::string Str(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}
double Num(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_number() ? v->to_number<double>() : 0.0;
}
std::optional<int64_t> Step(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_number()) return std::nullopt;
  return static_cast<int64_t>(v->to_number<double>());
}

}  // namespace

Result<Notification> FromPayload(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return Corrupt("outbox payload is not a JSON object: " + ec.message());
  const json::object& o = v.as_object();
  if (Num(o, "version") != 1) return Corrupt("outbox payload has an unknown version");
  if (const json::value* rv = o.if_contains("run"); rv && rv->is_object()) {
    const json::object& r = rv->as_object();
    Notification n;
    n.event = Str(o, "type");
    n.time = Num(o, "time");
    n.sparkline = Str(o, "sparkline");
    n.run_event_id = static_cast<int64_t>(Num(r, "event_id"));
    n.rule = n.event;
    n.run = Str(r, "name");
    n.state = Str(r, "state");
    n.severity = Str(r, "severity");
    n.title = Str(r, "title");
    n.message = Str(r, "message");
    n.cause = Str(r, "how");
    n.fix = Str(r, "advice");
    n.last_step = Step(r, "last_step");
    const json::value* fields = r.if_contains("fields");
    n.evidence = fields ? json::serialize(*fields) : "{}";
    const json::value* summary = r.if_contains("summary");
    n.run_summary = summary ? json::serialize(*summary) : "{}";
    n.first_seen = n.time;
    n.payload = std::string(text);
    return n;
  }
  const json::value* fv = o.if_contains("finding");
  if (!fv || !fv->is_object()) return Corrupt("outbox payload has no finding");
  const json::object& f = fv->as_object();
  Notification n;
  n.event = Str(o, "type");
  n.time = Num(o, "time");
  n.sparkline = Str(o, "sparkline");
  n.finding_id = static_cast<int64_t>(Num(f, "id"));
  n.rule = Str(f, "rule");
  n.title = Str(f, "title");
  n.severity = Str(f, "severity");
  n.state = Str(f, "state");
  n.run = Str(f, "run");
  n.series = Str(f, "series");
  n.onset_step = Step(f, "onset_step");
  n.first_step = Step(f, "first_step");
  n.last_step = Step(f, "last_step");
  n.message = Str(f, "message");
  n.cause = Str(f, "cause");
  n.fix = Str(f, "fix");
  const json::value* e = f.if_contains("evidence");
  n.evidence = e ? json::serialize(*e) : "{}";
  n.first_seen = Num(f, "first_seen");
  n.payload = std::string(text);
  return n;
}

Result<Notification> LoadNotification(store::Db& db, int64_t transition_id, const std::string& event) {
  Result<store::Stmt> q = db.Prepare(
      "SELECT t.time, t.to_state, t.severity, f.finding_id, f.rule, f.title, r.name, "
      "COALESCE(s.tag, ''), f.onset_step, f.first_step, f.last_step, f.message, f.cause, f.fix, "
      "f.evidence, f.first_seen, f.series_id "
      "FROM finding_transitions t JOIN findings f USING (finding_id) JOIN runs r ON r.run_id = f.run_id "
      "LEFT JOIN series s ON s.series_id = f.series_id WHERE t.transition_id = ?");
  if (!q.ok()) return q.status();
  q->Bind(1, transition_id);
  Result<bool> row = q->Step();
  if (!row.ok()) return row.status();
  if (!*row) return NotFound("no finding transition " + std::to_string(transition_id));
  auto opt = [&](int col) -> std::optional<int64_t> {
    if (q->IsNull(col)) return std::nullopt;
    return q->Int(col);
  };
  Notification n;
  n.event = event;
  n.time = q->Real(0);
  n.state = q->Text(1);
  n.severity = q->Text(2);
  n.finding_id = q->Int(3);
  n.rule = q->Text(4);
  n.title = q->Text(5);
  n.run = q->Text(6);
  n.series = q->Text(7);
  n.onset_step = opt(8);
  n.first_step = opt(9);
  n.last_step = opt(10);
  n.message = q->Text(11);
  n.cause = q->Text(12);
  n.fix = q->Text(13);
  n.evidence = q->Text(14);
  n.first_seen = q->Real(15);
  const int64_t series_id = q->Int(16);
  q->Reset();
  // The recent curve, where the connection has tw_sparkline (the diagnosis thread's does); a
  // message without it is still worth sending.
  if (series_id != 0) n.sparkline = diagnose::RecentSparkline(db, series_id);
  return n;
}

const std::vector<std::string>& RunEventTypes() {
  static const std::vector<std::string> types = {"run.started", "run.resumed", "run.finished", "run.crashed"};
  return types;
}

Result<Notification> LoadRunNotification(store::Db& db, int64_t event_id, bool* announced) {
  Result<store::Stmt> q = db.Prepare(
      "SELECT l.kind, l.time, r.name, l.last_step, l.how, l.announced, l.title, l.message, l.advice, l.summary, "
      "l.fields, l.sparkline FROM run_lifecycle l JOIN runs r USING (run_id) WHERE l.event_id = ?");
  if (!q.ok()) return q.status();
  q->Bind(1, event_id);
  Result<bool> row = q->Step();
  if (!row.ok()) return row.status();
  if (!*row) return NotFound("no run event " + std::to_string(event_id));
  Notification n;
  const std::string kind = q->Text(0);
  n.event = "run." + kind;
  n.time = q->Real(1);
  n.run = q->Text(2);
  if (!q->IsNull(3)) n.last_step = q->Int(3);
  n.cause = q->Text(4);
  *announced = q->Int(5) != 0;
  n.title = q->Text(6);
  n.message = q->Text(7);
  n.fix = q->Text(8);
  n.run_summary = q->Text(9);
  n.evidence = q->Text(10);
  n.sparkline = q->Text(11);
  n.rule = n.event;  // what a silence's --rule names, and what grouping by rule groups by
  n.state = kind;
  // A crash is as urgent as a NaN (it goes at once, past group_wait); the rest is information.
  n.severity = kind == "crashed" ? "critical" : "info";
  n.run_event_id = event_id;
  n.first_seen = n.time;
  return n;
}

Notification SampleNotification(double now) {
  Notification n;
  n.event = "test";
  n.time = now;
  n.rule = "non_finite_loss";
  n.title = "Loss is NaN or infinite (test message)";
  n.severity = "critical";
  n.state = "firing";
  n.run = "example/run-1 (test)";
  n.series = "Loss/train";
  n.onset_step = 700;
  n.first_step = 0;
  n.last_step = 760;
  n.message = "This is a test message from `trainwatch notify test`: Loss/train would be NaN from step 700.";
  n.cause = "Nothing is wrong: this checks that the channel delivers.";
  n.fix = "None needed. If you read this where you expected it, the channel works.";
  n.evidence = R"({"test":true,"first_non_finite_step":700})";
  n.first_seen = now;
  n.sparkline = "█▇▆▅▄▄▃▃▃▂▂▂▂▂▁▁▁▁×";
  return n;
}

}  // namespace tw::notify

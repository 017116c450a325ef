// The /api/ router and the endpoints over runs, findings and the outbox (api_series.cc has the
// points).
#include "web/api.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <map>

#include "notify/outbox.h"

namespace tw::web {
namespace json = boost::json;

Answer ErrorAnswer(unsigned status, const std::string& message) {
  return {status, json::object{{"error", message}}};
}

Answer BadParameter(const std::string& name, const std::string& why) {
  return {400, json::object{{"error", name + ": " + why}, {"parameter", name}}};
}

Answer StoreError(const Status& st) { return ErrorAnswer(500, st.message()); }

json::value Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

json::value ClassedValue(int value_class, double v) {
  switch (value_class) {
    case 1: return "NaN";
    case 2: return "Infinity";
    case 3: return "-Infinity";
    default: return Number(v);
  }
}

std::optional<int64_t> IntParam(const Target& t, const std::string& name, int64_t lo, int64_t hi,
                                std::optional<int64_t> fallback, std::optional<Answer>* bad) {
  auto it = t.params.find(name);
  if (it == t.params.end()) return fallback;
  int64_t v = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
    if (!*bad) *bad = BadParameter(name, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    return std::nullopt;
  }
  return v;
}

namespace {

// A nullable column as JSON.
json::value IntOrNull(const store::Stmt& s, int col) { return s.IsNull(col) ? json::value() : json::value(s.Int(col)); }
json::value RealOrNull(const store::Stmt& s, int col) { return s.IsNull(col) ? json::value() : Number(s.Real(col)); }
json::value TextOrNull(const store::Stmt& s, int col) { return s.IsNull(col) ? json::value() : json::value(s.Text(col)); }

// JSON text the store holds (evidence, W&B config values): parsed, or kept as a string when it
// does not parse (W&B writes NaN bare).
json::value Embedded(const std::string& text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  return ec ? json::value(text) : v;
}

// The verdict is the daemon's: its firing run_verdict finding (diagnose/verdict.h) says watch or
// kill; without one the run is healthy as of the daemon's last diagnosis.
constexpr const char* kRunsSql = R"(
SELECT r.run_id, r.name, r.root, r.format, r.display_name, r.exit_code,
  (SELECT max((SELECT max(p.step) FROM scalars p WHERE p.series_id = s.series_id))
     FROM series s WHERE s.run_id = r.run_id),
  (SELECT max((SELECT p.wall_time FROM scalars p WHERE p.series_id = s.series_id
               ORDER BY p.step DESC LIMIT 1))
     FROM series s WHERE s.run_id = r.run_id),
  (SELECT json_extract(f.evidence, '$.verdict') FROM findings f
     WHERE f.rule = 'run_verdict' AND f.run_id = r.run_id AND f.state = 'firing'),
  (SELECT count(*) FROM findings f
     WHERE f.state = 'firing' AND f.run_id = r.run_id AND f.rule <> 'run_verdict'),
  (SELECT json_group_array(rule) FROM (SELECT DISTINCT f.rule FROM findings f
     WHERE f.state = 'firing' AND f.run_id = r.run_id AND f.rule <> 'run_verdict' ORDER BY f.rule))
FROM runs r)";
// Buckets of a runs-list sparkline (at most four points each).
constexpr int64_t kSparklineWidth = 48;

int VerdictRank(const std::string& v) { return v == "kill" ? 0 : v == "watch" ? 1 : 2; }

Answer Runs(store::Db& db, const ApiContext& ctx) {
  Result<store::Stmt> s = db.Prepare(kRunsSql);
  if (!s.ok()) return StoreError(s.status());
  struct Row {
    json::object o;
    int rank;
    bool live;
    std::string name;
  };
  std::vector<Row> rows;
  const Status st = s->EachRow([&] {
    json::object o;
    o["id"] = s->Int(0);
    o["name"] = s->Text(1);
    o["root"] = s->Text(2);
    o["format"] = s->Text(3);
    o["display_name"] = TextOrNull(*s, 4);
    o["last_step"] = IntOrNull(*s, 6);
    o["last_write"] = RealOrNull(*s, 7);
    // A run is live when it wrote recently and has not said it exited (W&B's exit code).
    const bool live = !s->IsNull(7) && s->IsNull(5) && ctx.now - s->Real(7) < ctx.live_window_seconds;
    o["live"] = live;
    const std::string verdict = s->IsNull(8) ? "healthy" : s->Text(8);
    o["verdict"] = verdict;
    o["firing"] = s->Int(9);
    o["rules"] = Embedded(s->IsNull(10) ? "[]" : s->Text(10));
    rows.push_back({std::move(o), VerdictRank(verdict), live, s->Text(1)});
  });
  if (!st.ok()) return StoreError(st);
  // Each run's training loss as a sparkline, found as diagnosis finds it (its roles).
  Result<diagnose::RoleMap> roles = diagnose::AssignRoles(db, *ctx.role_patterns);
  if (!roles.ok()) return StoreError(roles.status());
  std::map<int64_t, int64_t> loss_series;
  for (const auto& a : roles->assignments)
    if (a.role == "train_loss") loss_series.emplace(a.run_id, a.series_id);
  for (Row& r : rows) {
    auto it = loss_series.find(r.o["id"].as_int64());
    if (it == loss_series.end()) {
      r.o["sparkline"] = nullptr;
      continue;
    }
    Result<json::array> line = Sparkline(db, it->second, kSparklineWidth);
    if (!line.ok()) return StoreError(line.status());
    r.o["sparkline"] = std::move(*line);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.live != b.live) return a.live;
    return a.name < b.name;
  });
  json::array out;
  for (Row& r : rows) out.push_back(std::move(r.o));
  return {200, json::object{{"runs", std::move(out)}, {"refresh_seconds", ctx.refresh_seconds}}};
}

// Findings, all of them or one run's; state: firing, resolved or all (pending too).
Answer Findings(store::Db& db, const std::string& state, std::optional<int64_t> run_id,
                bool with_transitions = false, std::optional<int64_t> finding_id = std::nullopt) {
  Result<store::Stmt> s = db.Prepare(
      "SELECT finding_id, rule, run_id, run, series_id, series, severity, state, onset_step, "
      "first_step, last_step, first_seen, last_seen, fired_at, resolved_at, message, cause, fix, evidence "
      "FROM finding_list WHERE (?1 = 'all' OR state = ?1) AND (?2 IS NULL OR run_id = ?2) "
      "AND (?3 IS NULL OR finding_id = ?3) "
      "ORDER BY state = 'firing' DESC, last_seen DESC, finding_id");
  if (!s.ok()) return StoreError(s.status());
  s->Bind(1, state);
  if (run_id) s->Bind(2, *run_id);
  else s->BindNull(2);
  if (finding_id) s->Bind(3, *finding_id);
  else s->BindNull(3);
  json::array out;
  const Status st = s->EachRow([&] {
    json::object o;
    o["id"] = s->Int(0);
    o["rule"] = s->Text(1);
    o["run_id"] = s->Int(2);
    o["run"] = s->Text(3);
    o["series_id"] = s->Int(4);
    o["series"] = s->Text(5);
    o["severity"] = s->Text(6);
    o["state"] = s->Text(7);
    o["onset_step"] = IntOrNull(*s, 8);
    o["first_step"] = IntOrNull(*s, 9);
    o["last_step"] = IntOrNull(*s, 10);
    o["first_seen"] = RealOrNull(*s, 11);
    o["last_seen"] = RealOrNull(*s, 12);
    o["fired_at"] = RealOrNull(*s, 13);
    o["resolved_at"] = RealOrNull(*s, 14);
    o["message"] = s->Text(15);
    o["cause"] = s->Text(16);
    o["fix"] = s->Text(17);
    o["evidence"] = Embedded(s->Text(18));
    out.push_back(std::move(o));
  });
  if (!st.ok()) return StoreError(st);
  if (with_transitions) {
    Result<store::Stmt> t = db.Prepare(
        "SELECT time, from_state, to_state, severity, message FROM finding_transitions "
        "WHERE finding_id = ?1 ORDER BY transition_id DESC LIMIT 20");
    if (!t.ok()) return StoreError(t.status());
    for (json::value& f : out) {
      json::array list;
      t->Reset();
      t->Bind(1, f.as_object()["id"].as_int64());
      const Status read = t->EachRow([&] {
        list.push_back(json::object{{"time", Number(t->Real(0))}, {"from", t->Text(1)}, {"to", t->Text(2)},
                                    {"severity", t->Text(3)}, {"message", t->Text(4)}});
      });
      if (!read.ok()) return StoreError(read);
      std::reverse(list.begin(), list.end());
      f.as_object()["transitions"] = std::move(list);
    }
  }
  return {200, json::object{{"findings", std::move(out)}}};
}

// key -> JSON value of run_config or run_summary_values.
Result<json::object> KeyValues(store::Db& db, const char* table, int64_t run_id) {
  Result<store::Stmt> s = db.Prepare(std::string("SELECT key, value_json FROM ") + table +
                                     " WHERE run_id = ?1 ORDER BY key");
  if (!s.ok()) return s.status();
  s->Bind(1, run_id);
  json::object o;
  TW_RETURN_IF_ERROR(s->EachRow([&] { o[s->Text(0)] = Embedded(s->Text(1)); }));
  return o;
}

Answer Run(store::Db& db, int64_t run_id, const ApiContext& ctx) {
  Result<store::Stmt> s = db.Prepare(
      "SELECT run_id, name, root, format, first_seen, display_name, external_id, project, entity, "
      "start_time, exit_code, continues_run_id FROM runs WHERE run_id = ?1");
  if (!s.ok()) return StoreError(s.status());
  Result<bool> found = s->Bind(1, run_id).Step();
  if (!found.ok()) return StoreError(found.status());
  if (!*found) return ErrorAnswer(404, "no run " + std::to_string(run_id));
  json::object run;
  run["id"] = s->Int(0);
  run["name"] = s->Text(1);
  run["root"] = s->Text(2);
  run["format"] = s->Text(3);
  run["first_seen"] = RealOrNull(*s, 4);
  run["display_name"] = TextOrNull(*s, 5);
  run["external_id"] = TextOrNull(*s, 6);
  run["project"] = TextOrNull(*s, 7);
  run["entity"] = TextOrNull(*s, 8);
  run["start_time"] = RealOrNull(*s, 9);
  run["exit_code"] = IntOrNull(*s, 10);
  run["continues_run_id"] = IntOrNull(*s, 11);

  Result<store::Stmt> hp = db.Prepare(
      "SELECT key, value_type, value_num, value_text FROM hparams WHERE run_id = ?1 ORDER BY key");
  if (!hp.ok()) return StoreError(hp.status());
  hp->Bind(1, run_id);
  json::object hparams;
  const Status hparams_read = hp->EachRow([&] {
    const std::string type = hp->Text(1);
    json::value v;
    if (type == "string") v = hp->Text(3);
    else if (type == "bool") v = hp->Real(2) != 0;
    else if (type == "number") v = RealOrNull(*hp, 2);
    hparams[hp->Text(0)] = std::move(v);
  });
  if (!hparams_read.ok()) return StoreError(hparams_read);
  Result<json::object> config = KeyValues(db, "run_config", run_id);
  if (!config.ok()) return StoreError(config.status());
  Result<json::object> summary = KeyValues(db, "run_summary_values", run_id);
  if (!summary.ok()) return StoreError(summary.status());

  Result<store::Stmt> ss = db.Prepare(
      "SELECT series_id, tag, kind, plugin, step_metric, "
      "(SELECT max(p.step) FROM scalars p WHERE p.series_id = s.series_id) "
      "FROM series s WHERE run_id = ?1 ORDER BY tag, kind");
  if (!ss.ok()) return StoreError(ss.status());
  ss->Bind(1, run_id);
  json::array series;
  const Status series_read = ss->EachRow([&] {
    series.push_back(json::object{{"id", ss->Int(0)},       {"tag", ss->Text(1)},
                                  {"kind", ss->Text(2)},    {"plugin", ss->Text(3)},
                                  {"step_metric", ss->Text(4)}, {"last_step", IntOrNull(*ss, 5)}});
  });
  if (!series_read.ok()) return StoreError(series_read);
  Answer findings = Findings(db, "all", run_id);
  if (findings.status != 200) return findings;
  Result<std::vector<diagnose::RoleAssignment>> roles = RunRoles(db, run_id, *ctx.role_patterns);
  if (!roles.ok()) return StoreError(roles.status());
  json::array& finding_list = findings.body.as_object()["findings"].as_array();
  Result<json::array> markers = RunMarkers(db, run_id, *roles, finding_list);
  if (!markers.ok()) return StoreError(markers.status());
  Result<json::array> files = RunFiles(db, run_id);
  if (!files.ok()) return StoreError(files.status());

  json::object o;
  o["run"] = std::move(run);
  o["hparams"] = std::move(hparams);
  o["config"] = std::move(*config);
  o["summary"] = std::move(*summary);
  o["series"] = std::move(series);
  o["findings"] = std::move(finding_list);
  o["roles"] = RolesJson(*roles);
  o["markers"] = std::move(*markers);
  o["files"] = std::move(*files);
  o["refresh_seconds"] = ctx.refresh_seconds;
  return {200, std::move(o)};
}

Answer Outbox(store::Db& db) {
  Result<std::vector<notify::OutboxCounts>> counts = notify::CountOutbox(db);
  if (!counts.ok()) return StoreError(counts.status());
  Result<std::vector<notify::WaitingGroup>> waiting = notify::ListWaiting(db);
  if (!waiting.ok()) return StoreError(waiting.status());
  json::array channels, groups;
  for (const auto& c : *counts)
    channels.push_back(json::object{{"channel", c.channel},
                                    {"pending", c.pending},
                                    {"sent", c.sent},
                                    {"dead", c.dead},
                                    {"oldest_pending", c.oldest_pending > 0 ? Number(c.oldest_pending) : json::value()},
                                    {"last_error", c.last_error}});
  for (const auto& w : *waiting)
    groups.push_back(json::object{{"channel", w.channel},
                                  {"group", Embedded(w.group)},
                                  {"messages", w.messages},
                                  {"oldest", Number(w.oldest)},
                                  {"due", Number(w.due)}});
  return {200, json::object{{"channels", std::move(channels)}, {"waiting", std::move(groups)}}};
}

// "/api/runs/42" with prefix "/api/runs/": 42, or nullopt when the rest is no id.
std::optional<int64_t> IdAfter(const std::string& path, const std::string& prefix) {
  const std::string rest = path.substr(prefix.size());
  int64_t id = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), id);
  if (rest.empty() || ec != std::errc() || end != rest.data() + rest.size()) return std::nullopt;
  return id;
}

}  // namespace

Answer AnswerApi(const Target& t, store::Db& db, const ApiContext& ctx) {
  const std::string& p = t.path;
  if (p == "/api/runs") return Runs(db, ctx);
  if (p == "/api/findings") {
    auto it = t.params.find("state");
    const std::string state = it == t.params.end() ? "firing" : it->second;
    if (state != "firing" && state != "resolved" && state != "all")
      return BadParameter("state", "must be firing, resolved or all");
    std::optional<Answer> bad;
    const auto transitions = IntParam(t, "transitions", 0, 1, 0, &bad);
    if (bad) return *bad;
    return Findings(db, state, std::nullopt, *transitions != 0);
  }
  if (p == "/api/outbox") return Outbox(db);
  if (p == "/api/silences") return AnswerSilences(db, ctx);
  for (const std::string prefix : {"/api/runs/", "/api/series/", "/api/findings/"}) {
    if (!p.starts_with(prefix)) continue;
    const std::optional<int64_t> id = IdAfter(p, prefix);
    if (!id) return BadParameter("id", "'" + p.substr(prefix.size()) + "' is not an integer id");
    if (prefix == "/api/runs/") return Run(db, *id, ctx);
    if (prefix == "/api/series/") return AnswerSeries(t, db, *id);
    // One finding in any state, with its transitions: where a notification's link lands.
    Answer a = Findings(db, "all", std::nullopt, true, *id);
    if (a.status != 200) return a;
    json::array& list = a.body.as_object()["findings"].as_array();
    if (list.empty()) return ErrorAnswer(404, "no finding " + std::to_string(*id));
    return {200, json::object{{"finding", std::move(list.front())}}};
  }
  return ErrorAnswer(404, "no such endpoint: " + p);
}

}  // namespace tw::web

#include "diagnose/report.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "base/json.h"
#include "diagnose/verdict.h"

namespace tw::diagnose {

namespace {

constexpr int kSparkWidth = 48;

bool Shown(const Observation& o) { return o.muted_by.empty(); }

std::string State(const Observation& o) { return o.pending ? "pending" : "firing"; }

std::string Opt(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "-"; }

// The series' curve as a sparkline, and a second line with '^' under the onset step.
std::pair<std::string, std::string> Sparkline(store::Db& db, const Observation& o) {
  if (o.series_id == 0) return {};
  Result<store::Stmt> q = db.Prepare(
      "SELECT tw_sparkline(step, value, ?2), min(step), max(step) FROM scalars "
      "WHERE series_id = ?1 AND superseded = 0");
  if (!q.ok()) return {};
  q->Bind(1, o.series_id).Bind(2, int64_t{kSparkWidth});
  Result<bool> row = q->Step();
  if (!row.ok() || !*row || q->IsNull(0)) return {};
  std::string spark = q->Text(0);
  if (spark.empty()) return {};  // no scalar points: a histogram series (ternary_weights)
  const int64_t lo = q->Int(1), hi = q->Int(2);
  std::string marker;
  if (o.onset_step && hi > lo) {
    // Count the sparkline's cells (multi-byte UTF-8 characters).
    size_t cells = 0;
    for (unsigned char c : spark) cells += (c & 0xC0) != 0x80;
    const double frac = static_cast<double>(*o.onset_step - lo) / static_cast<double>(hi - lo);
    const size_t pos = std::min(cells ? cells - 1 : 0, static_cast<size_t>(std::max(0.0, frac) * cells));
    marker = std::string(pos, ' ') + "^ step " + std::to_string(*o.onset_step);
  }
  return {spark + "  [" + std::to_string(lo) + " .. " + std::to_string(hi) + "]", marker};
}

std::string Json(const Evaluation& ev) {
  tw::Json arr = tw::Json::Array();
  for (const auto& o : ev.observations) {
    if (!Shown(o)) continue;
    tw::Json j;
    j.Str("rule", o.rule).Str("title", o.title).Str("severity", SeverityName(o.severity))
        .Str("run", o.run).Str("series", o.series).Str("state", State(o));
    auto opt = [&](const char* k, const std::optional<int64_t>& v) {
      if (v) j.Num(k, static_cast<double>(*v));
      else j.Raw(k, "null");
    };
    opt("onset_step", o.onset_step);
    opt("first_step", o.first_step);
    opt("last_step", o.last_step);
    j.Str("message", o.message).Raw("evidence", o.evidence.empty() ? "{}" : o.evidence)
        .Str("cause", o.cause).Str("fix", o.fix).Num("held_seconds", o.held_seconds);
    arr.Push(j);
  }
  return arr.str() + "\n";
}

std::string Text(const Evaluation& ev, store::Db& db, bool markdown) {
  std::map<int64_t, std::vector<const Observation*>> by_run;
  std::map<int64_t, std::vector<const Observation*>> muted;
  for (const auto& o : ev.observations)
    if (o.rule != kRunVerdictId)  // the verdict heads each run's section already
      (Shown(o) ? by_run : muted)[o.run_id].push_back(&o);
  std::ostringstream out;
  int healthy = 0;
  for (const auto& v : ev.verdicts) {
    auto& obs = by_run[v.run_id];
    if (v.verdict == "healthy" && obs.empty()) {
      healthy++;
      if (!markdown && v.forecast.empty()) continue;
    }
    std::sort(obs.begin(), obs.end(), [](const Observation* a, const Observation* b) {
      return a->severity > b->severity || (a->severity == b->severity && a->rule < b->rule);
    });
    if (markdown) out << "## " << v.run << ": " << v.verdict << "\n\n";
    else out << "== " << v.run << ": " << v.verdict << "\n";
    if (!v.forecast.empty()) out << (markdown ? "Forecast: " : "   forecast: ") << v.forecast << "\n" << (markdown ? "\n" : "");
    for (const Observation* o : obs) {
      const std::string head = std::string(SeverityName(o->severity)) + " " + o->rule +
                               (o->pending ? " (pending)" : "") + (o->series.empty() ? "" : " on " + o->series);
      auto [spark, marker] = Sparkline(db, *o);
      if (markdown) {
        out << "### " << head << "\n\n" << o->message << "\n\n";
        if (!spark.empty()) out << "```\n" << spark << "\n" << marker << "\n```\n\n";
        if (!o->cause.empty()) out << "**Likely cause.** " << o->cause << "\n\n";
        if (!o->fix.empty()) out << "**Fix.** " << o->fix << "\n\n";
        out << "Evidence: `" << o->evidence << "`\n\n";
      } else {
        out << "  [" << head << "] steps " << Opt(o->first_step) << "-" << Opt(o->last_step) << "\n";
        out << "    " << o->message << "\n";
        if (!spark.empty()) out << "    " << spark << "\n" << (marker.empty() ? "" : "    " + marker + "\n");
        if (!o->cause.empty()) out << "    cause: " << o->cause << "\n";
        if (!o->fix.empty()) out << "    fix:   " << o->fix << "\n";
      }
    }
    for (const Observation* o : muted[v.run_id])
      out << (markdown ? "- " : "    ") << "(" << o->rule << " muted by " << o->muted_by << ")\n";
    out << "\n";
  }
  out << (markdown ? "" : "") << ev.verdicts.size() << " runs examined; " << healthy << " healthy";
  for (const char* verdict : {"watch", "kill"}) {
    const auto n = std::count_if(ev.verdicts.begin(), ev.verdicts.end(),
                                 [&](const Verdict& v) { return v.verdict == verdict; });
    out << ", " << n << " " << verdict;
  }
  out << "\n";
  for (const auto& e : ev.errors) out << "rule error: " << e << "\n";
  return out.str();
}

}  // namespace

bool ParseReportFormat(const std::string& s, ReportFormat* out) {
  if (s == "text") *out = ReportFormat::kText;
  else if (s == "json") *out = ReportFormat::kJson;
  else if (s == "markdown" || s == "md") *out = ReportFormat::kMarkdown;
  else return false;
  return true;
}

std::string RenderReport(const Evaluation& ev, store::Db& db, ReportFormat format) {
  switch (format) {
    case ReportFormat::kJson: return Json(ev);
    case ReportFormat::kMarkdown: return Text(ev, db, true);
    case ReportFormat::kText: break;
  }
  return Text(ev, db, false);
}

}  // namespace tw::diagnose

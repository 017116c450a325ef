#include "diagnose/verdict.h"

#include <algorithm>

#include "base/json.h"

namespace tw::diagnose {

const Rule& RunVerdictRule() {
  static const Rule rule = [] {
    Rule r;
    r.id = kRunVerdictId;
    r.title = "Run verdict";
    r.severity = Severity::kInfo;
    r.cause = "The findings named in the message: a critical one makes the verdict kill, a warning "
              "watch.";
    r.fix = "See those findings, each with its own cause and fix; the verdict clears when they do.";
    r.origin = "builtin:engine (not a SQL file)";
    return r;
  }();
  return rule;
}

std::optional<Observation> VerdictObservation(const Verdict& v,
                                              const std::vector<const Observation*>& run_obs) {
  if (v.verdict != "kill" && v.verdict != "watch") return std::nullopt;
  const Severity decisive = v.verdict == "kill" ? Severity::kCritical : Severity::kWarning;
  // What the verdict counted (engine.cc): unmuted, firing, warning or worse.
  std::vector<const Observation*> reasons;
  for (const Observation* o : run_obs)
    if (o->muted_by.empty() && !o->pending && o->severity >= Severity::kWarning && o->rule != kRunVerdictId)
      reasons.push_back(o);
  std::sort(reasons.begin(), reasons.end(), [](const Observation* a, const Observation* b) {
    if (a->severity != b->severity) return a->severity > b->severity;
    return a->rule != b->rule ? a->rule < b->rule : a->series < b->series;
  });

  Observation out;
  const Rule& r = RunVerdictRule();
  out.rule = r.id;
  out.title = r.title;
  out.severity = r.severity;
  out.cause = r.cause;
  out.fix = r.fix;
  out.run_id = v.run_id;
  out.run = v.run;
  std::string decided, also;
  Json list = Json::Array();
  auto widen = [](std::optional<int64_t>& acc, const std::optional<int64_t>& x, bool take_max) {
    if (x && (!acc || (take_max ? *x > *acc : *x < *acc))) acc = x;
  };
  for (const Observation* o : reasons) {
    const bool decides = o->severity == decisive;
    std::string& text = decides ? decided : also;
    text += (text.empty() ? "" : ", ") + o->rule + " (" + SeverityName(o->severity) + ")" +
            (o->series.empty() ? "" : " on " + o->series);
    Json j;
    j.Str("rule", o->rule).Str("severity", SeverityName(o->severity)).Str("series", o->series);
    if (o->onset_step) j.Num("onset_step", static_cast<double>(*o->onset_step));
    else j.Raw("onset_step", "null");
    list.Push(j.Bool("decides", decides));
    if (!decides) continue;
    widen(out.onset_step, o->onset_step, false);
    widen(out.first_step, o->first_step, false);
    widen(out.last_step, o->last_step, true);
  }
  out.message = v.verdict + ": " + (decided.empty() ? "no finding stands out" : decided);
  if (!also.empty()) out.message += "; also " + also;
  if (!v.forecast.empty()) out.message += "; forecast: " + v.forecast;
  Json evidence;
  evidence.Str("verdict", v.verdict).Nested("reasons", list)
      .Raw("forecast", v.forecast.empty() ? "null" : v.evidence);
  out.evidence = evidence.str();
  return out;
}

}  // namespace tw::diagnose

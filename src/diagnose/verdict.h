// run_verdict: a run's verdict (healthy / watch / kill, engine.h's Verdict) as a finding of its
// own, so that it reaches the JSON contract and the `findings` table, not only the text report.
//
// It is no SQL rule: the engine computes it after inhibition from the other findings of the
// run. A run judged `watch` or `kill` gets one observation (series 0) naming the findings that
// decided it; a healthy run gets none, so a stored run_verdict resolves the usual way once the
// run is healthy again. Its severity is always info: default channels (min_severity warning)
// stay quiet about it, and a verdict moving between watch and kill is no severity change (which
// would be a transition and a notification of its own).
#pragma once

#include <optional>
#include <vector>

#include "diagnose/engine.h"
#include "diagnose/rule.h"

namespace tw::diagnose {

inline constexpr const char* kRunVerdictId = "run_verdict";

// The pseudo-rule's description (id, title, severity, cause, fix), for `trainwatch rules` and
// for config checks; it has no SQL and no parameters.
const Rule& RunVerdictRule();

// The run_verdict observation of `v`, decided by `run_obs` (the run's observations; muted,
// pending and info ones do not count), or nullopt for a healthy run.
std::optional<Observation> VerdictObservation(const Verdict& v,
                                              const std::vector<const Observation*>& run_obs);

}  // namespace tw::diagnose

// Findings that live: the engine's observations folded into the `findings` table with a
// lifecycle (pending -> firing -> resolved) and a history (`finding_transitions`).
//
//   - a fingerprint is (rule, run, series); a new condition starts pending when its rule has a
//     `for` it has not held yet, else firing;
//   - a firing finding resolves only after `resolve_after` evaluations of its run in a row
//     without the condition (damping flapping); a pending one that disappears is dropped
//     (resolved without ever having fired);
//   - a muted observation (inhibited by another rule on the run) keeps its finding as it is;
//   - a rule that fires once per onset (rule.h `fires: once_per_onset`, an [[alert]]'s
//     new_best): a firing finding seen with a new onset_step resolves at once (superseded) and
//     the new onset fires (or goes pending) as a new condition would: one firing per onset.
//
// Owned by the daemon's diagnosis thread, on a read-write connection of its own that writes
// only these tables (the ingest writer never touches them). One transaction per Apply().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "diagnose/engine.h"
#include "store/db.h"

namespace tw::diagnose {

struct Transition {
  int64_t transition_id = 0;  // its finding_transitions row
  int64_t finding_id = 0;
  std::string rule, run, series;
  std::string from, to;  // states; from is "" for a new finding
  Severity severity = Severity::kWarning;
  std::string message;
};

class FindingTracker {
 public:
  // Opens its own read-write connection to an existing, migrated store.
  static Result<std::unique_ptr<FindingTracker>> Open(const std::string& db_path,
                                                      int resolve_after = 2);

  // Folds one evaluation in, as of `now`; returns the transitions it made.
  Result<std::vector<Transition>> Apply(const Evaluation& ev, double now);

  // Called for each transition inside Apply's transaction, on the tracker's connection (which
  // has the tw_* SQL functions): what it writes commits with the transition or not at all
  // (notifications queue their messages this way). An error rolls the whole Apply back.
  using TransitionHook = std::function<Status(store::Db& db, const Transition& t, double now)>;
  void SetTransitionHook(TransitionHook hook) { hook_ = std::move(hook); }

 private:
  FindingTracker(std::unique_ptr<store::Db> db, int resolve_after)
      : db_(std::move(db)), resolve_after_(resolve_after) {}
  std::unique_ptr<store::Db> db_;
  int resolve_after_;
  TransitionHook hook_;
};

}  // namespace tw::diagnose

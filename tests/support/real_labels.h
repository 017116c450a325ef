// Labels of real training runs (tests/data/real_runs, tests/data/cpu_runs,
// bench/real_labels/corpus_sick.json): per run, the rules a careful engineer expects to fire,
// the weak ones a reviewer would mention, the ones the run's traps rule out, and the onset.
// Read by the real-runs test and by diagnose_eval --real, with SQLite's JSON functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tw::testing {

struct RealLabel {
  std::string run;   // the run's name in the store (its path under the ingested root)
  std::string root;  // "corpus-sick", "corpus", or "" (the label file's directory)
  std::vector<std::string> expect, weak, expect_not;
  std::optional<int64_t> onset;           // of expect[0]
  std::map<std::string, int64_t> onsets;  // of the others, where the labels say
  bool at_chance = false;
  std::string notes, cause;
  std::optional<int64_t> OnsetOf(const std::string& rule) const;
};

// The labels in `path`, in key order; keys whose value is no object ("_about") are skipped.
Result<std::vector<RealLabel>> ReadRealLabels(const std::string& path);

// The rule families the labels are scored by: a label is caught when any rule of its family
// fired (the families, then the rules it does not name, each a family of its own).
struct RuleFamily {
  std::string name;
  std::vector<std::string> rules;
};
const std::vector<RuleFamily>& RuleFamilies();
std::string FamilyOf(const std::string& rule);  // an unknown rule is a family of its own

// What fired on one run (unmuted, not pending): the rule, and whether at warning or worse.
struct FiredRule {
  std::string rule;
  bool loud = false;
};
// Where the findings fall short of the label: "miss FAMILY" for each expected family none of
// whose rules fired, and "alarm RULE" for each rule at warning or worse on a healthy run (one
// expecting nothing) outside its weak families. Sorted.
std::vector<std::string> LabelGaps(const RealLabel& label, const std::vector<FiredRule>& fired);

}  // namespace tw::testing

// Alerts without SQL: an [[alert]] table of the config (a run glob, a tag glob or a role, and
// one condition) becomes a rule like the SQL ones (rule.h): its SQL text is generated here, with
// a header, and parsed by ParseRule, so the engine runs it as any other rule and its findings
// have the same lifecycle, routing, grouping and silences. docs/alerts.md is the user's
// description. Pure functions: any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "diagnose/rule.h"

namespace tw::diagnose {

struct Alert {
  enum class Condition { kAbove, kBelow, kNewBest, kChangePct, kAbsentFor };

  std::string name;              // the rule id: [A-Za-z0-9_]+
  std::string run_glob = "*";    // over run names (case-insensitive, `*` crosses `/`)
  std::string tag;               // a glob over tags, as run_glob; or
  std::string role;              // a role (roles.h): the series that play it
  Condition condition = Condition::kAbove;
  // above/below: the threshold; change_pct: the percent (> 0 a rise of at least that much,
  // < 0 a fall); absent_for: the seconds without a new point.
  double value = 0;
  int best = 0;                  // new_best: -1 the lowest is best ("min"), +1 the highest ("max")
  double window = 0;             // change_pct: how far back the value compared with lies ...
  bool window_seconds = false;   // ... in wall-clock seconds (a duration) or in steps (a number)
  double for_seconds = 0;        // how long (the series' own time) it must hold before it fires
  Severity severity = Severity::kWarning;
  std::string message;           // optional: heads the finding's message, and is its title
  std::string file;              // where the config defines it
  int line = 0;
  bool operator==(const Alert&) const = default;
};

// "above 0.9", "new best (max)", "change of -20% over 500 steps", "absent for 2h", ...
std::string DescribeCondition(const Alert& a);
// What the alert watches: "val/acc in runs 'exp*'", "role val_loss in runs '*'".
std::string DescribeTarget(const Alert& a);

// The rule `a` becomes: id a.name, origin a.file, sql_line a.line (so Where() is the alert's
// file:line), `alert` set. Its numbers are declared parameters ([rules.NAME] may set them).
Result<Rule> AlertRule(const Alert& a);
std::vector<Rule> AlertRules(const std::vector<Alert>& alerts, std::vector<std::string>* errors);

// SQL counting the series `a` watches now, over every run (role alerts: the runs whose roles
// have been mapped on the connection: temp.run_roles).
std::string AlertMatchCountSql(const Alert& a);

}  // namespace tw::diagnose

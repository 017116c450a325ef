// A diagnosis rule: one .sql file whose leading comment lines are a header, then one SELECT.
//
//   -- id: loss_spikes
//   -- title: Loss spikes that recur or do not recover
//   -- severity: warning                 info | warning | critical (a row may override)
//   -- roles: train_loss                 the run must have every role listed
//   -- roles_any: val_loss, val_acc      and at least one of these (what else it reads)
//   -- needs_rows: run_classes           and a row in each of these run fact views (roles.h)
//   -- scope: run                        run (default): once per examined run, :run_id bound;
//                                        all: once per cycle over every run (rows name run_id)
//   -- for: 0                            seconds of the run's own time the condition must hold
//   -- inhibited_by: non_finite_loss     muted on a run where one of these fires
//   -- fires: once_per_onset             each new onset_step is a firing of its own (the
//                                        one before resolves): an event per onset, such as
//                                        each new best of a series; default: per condition
//   -- param window = 100: trailing window, in points
//   -- cause: ...                        the likely cause (a row's `cause` column overrides)
//   -- fix: ...                          what to do (a row's `fix` column overrides)
//
// The SELECT's rows are the conditions that hold now, one per finding. Columns, by name, all
// optional except message: series_id, run_id (scope all), severity, onset_step, first_step,
// last_step, message, evidence (JSON text), cause, fix. Parameters are bound by name:
// :run_id, :now (unix seconds), and each declared param (config may override its value).
// docs/diagnosis.md is the user-facing description.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"

namespace tw::diagnose {

enum class Severity { kInfo = 0, kWarning = 1, kCritical = 2 };
const char* SeverityName(Severity s);
bool ParseSeverity(std::string_view s, Severity* out);

struct RuleParam {
  std::string name;
  double default_value = 0;
  std::string description;
};

struct Rule {
  std::string id;
  std::string title;
  Severity severity = Severity::kWarning;
  std::vector<std::string> roles;
  std::vector<std::string> roles_any;  // at least one of these too (empty: no such need)
  std::vector<std::string> needs_rows;  // run fact views (RunFactViews) the run needs a row in
  bool scope_all = false;
  double for_seconds = 0;
  std::vector<std::string> inhibited_by;
  bool once_per_onset = false;  // `fires: once_per_onset`
  std::vector<RuleParam> params;
  std::string cause, fix;
  std::string sql;     // the whole file: SQLite skips the header comments
  std::string origin;  // file path, or "builtin:NAME.sql"
  int sql_line = 1;    // the line its SELECT starts on (messages about the rule name origin:line)
  bool alert = false;  // generated from a config [[alert]] (alert.h): origin:sql_line is its table
  std::string Where() const { return origin + ":" + std::to_string(sql_line); }
  // Whether a run with these roles gives the rule what it reads (`roles` and `roles_any`).
  bool CanRunWith(const std::set<std::string>& have) const;
};

// Parses one rule file's text. Errors name `origin` and the line.
Result<Rule> ParseRule(std::string_view text, const std::string& origin);

// The rules compiled into the binary (sql/rules/*.sql), by file name.
struct EmbeddedRule {
  const char* name;
  const char* text;
};
const std::vector<EmbeddedRule>& EmbeddedRules();

// The built-in rules, then every *.sql file of `user_dir` (if not empty) in name order; a user
// rule with a built-in's id replaces it. A file that does not parse is reported in `errors`
// ("FILE: why") and skipped.
std::vector<Rule> LoadRules(const std::string& user_dir, std::vector<std::string>* errors);

}  // namespace tw::diagnose

// The diagnosis engine: rules (rule.h) evaluated over runs on a read-only connection of its
// own, with the role map (roles.h) and the SQL functions (sql_functions.h) installed there.
// One owner thread: the daemon's diagnosis thread, or the CLI. It never writes the store;
// findings.h turns its observations into stored findings.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "diagnose/alert.h"
#include "diagnose/roles.h"
#include "diagnose/rule.h"
#include "diagnose/rule_limits.h"
#include "store/db.h"

namespace tw::diagnose {

class StepMetrics;

struct EngineOptions {
  std::string rules_dir;  // extra rules (*.sql); empty: built-ins only
  // Per rule id, parameter values overriding the rule's defaults (config [rules.ID]).
  std::map<std::string, std::map<std::string, double>> params;
  std::set<std::string> disabled;       // rule ids not to run
  std::vector<RolePattern> roles;       // user role patterns, ahead of the defaults
  RuleLimitOptions limits;              // what one rule may spend (config [rules])
  std::vector<Alert> alerts;            // config [[alert]] tables, each a rule (alert.h)
  bool operator==(const EngineOptions&) const = default;
};

// The mistakes `options` make about rules, found without a store: a disabled id, a [rules.ID]
// or a parameter that no rule has. One "config: ..." line each (as Engine::load_errors() has
// them), empty when there are none. Reads the rules directory.
std::vector<std::string> ConfigErrors(const EngineOptions& options);

// Every rule `options` makes: the built-in ones and the rules directory's (LoadRules), then one
// per [[alert]] (an alert whose name a rule has is left out: ConfigErrors reports it). Rule
// files that do not parse are reported in `errors`.
std::vector<Rule> AllRules(const EngineOptions& options, std::vector<std::string>* errors);

// A rule that failed in an evaluation, or went over a limit (rule_limits.h) and was skipped
// for the rest of it.
struct RuleError {
  std::string rule;     // its id
  std::string limit;    // "time" or "memory" when it went over one; "" for an error
  std::string message;  // names the rule's file (and, for a limit, the line its SELECT starts on)
};
inline std::ostream& operator<<(std::ostream& out, const RuleError& e) { return out << e.message; }

// One condition a rule saw on one run (and series) in one evaluation.
struct Observation {
  std::string rule, title;
  Severity severity = Severity::kWarning;
  int64_t run_id = 0;
  std::string run;
  int64_t series_id = 0;  // 0: about the run as a whole
  std::string series;     // the series' tag
  std::optional<int64_t> onset_step, first_step, last_step;
  std::string message, cause, fix;
  std::string evidence = "{}";  // JSON
  double held_seconds = 0;      // how long (run time) the condition has held
  bool pending = false;         // held for less than the rule's `for`
  std::string muted_by;         // non-empty: inhibited by this rule on the same run
  bool once_per_onset = false;  // its rule fires once per onset: a new onset_step is a new firing
};

struct Verdict {
  int64_t run_id = 0;
  std::string run;
  std::string verdict;    // healthy, watch, kill
  std::string forecast;   // "at this trajectory, ..." or empty
  std::string evidence = "{}";
};

struct Evaluation {
  // Muted ones included, with muted_by set; last, a run_verdict per run judged watch or kill
  // (verdict.h), unless disabled.
  std::vector<Observation> observations;
  std::vector<Verdict> verdicts;          // one per examined subject run, and one per run a
                                          // scope-all rule fired on without examining it
  std::vector<int64_t> examined;          // subject runs examined by scope-run rules
  std::set<std::string> all_scope_rules;  // rules that examined every run
  std::vector<RuleError> errors;          // rules that failed on some run, or went over a limit
  // Rules that did not run on every examined run they apply to (failed, over a limit, benched):
  // what they found before is left as it is, not taken as resolved.
  std::set<std::string> incomplete_rules;
  std::map<std::string, double> rule_seconds;  // time spent in each rule (rule authors' profile)
};

class Engine {
 public:
  // Opens `db_path` read-only, installs the SQL functions, loads and prepares the rules. A rule
  // that does not parse or prepare is reported in load_errors() and skipped.
  static Result<std::unique_ptr<Engine>> Open(const std::string& db_path, EngineOptions options);
  ~Engine();

  const std::vector<std::string>& load_errors() const { return load_errors_; }
  const std::vector<Rule>& rules() const { return rules_; }
  store::Db& db() { return *db_; }

  // Runs whose data changed since the previous call (every run on the first call): a run's
  // files' committed offsets and counts, one cheap query over `sources`.
  Result<std::vector<int64_t>> ChangedRuns();

  // Evaluates the scope-run rules on `runs` (null: every run) and, when `scope_all`, the
  // scope-all rules on every run, as of `now` (unix seconds). A rule that goes over a limit
  // (options.limits) is stopped, reported in `errors`, and benched: skipped in this and later
  // evaluations of this engine for a pause that doubles each time it goes over (1 minute, 2,
  // 4, ... up to an hour), so a rule that loops costs its time limit about once an hour and
  // never holds back the others' findings for long; the other rules run on. A rule that did not
  // run on every examined run is listed in `incomplete_rules`.
  // `critical_only`: only the rules whose header says critical (no scope-all rules, no
  // verdicts), the others listed in `incomplete_rules`, so a caller can store a live run's
  // critical findings (a NaN) before the full evaluation, which a slow rule may hold up.
  Result<Evaluation> Evaluate(const std::vector<int64_t>* runs, double now, bool scope_all = true,
                              bool critical_only = false);

  // Thread-safe: makes a running Evaluate stop soon (between rules, and inside a statement
  // through sqlite3_interrupt and the rule limits' progress handler) and return a kInternal
  // "cancelled" status. The read transaction is rolled back.
  void Cancel();
  // Thread-safe: makes a running Evaluate stop soon, as Cancel does, and return a kInternal
  // "diagnosis interrupted" status; unlike Cancel it lasts only until ClearInterrupt(), so the
  // owner can pre-empt a long evaluation with more urgent work and then go on. While set, every
  // Evaluate returns at once.
  void Interrupt();
  bool Interrupted() const { return interrupt_; }
  void ClearInterrupt() { interrupt_ = false; }

  // How many series each [[alert]] watches now, by name (role alerts: among the runs whose
  // roles were mapped by an evaluation of this engine, or by Roles()).
  Result<std::map<std::string, int64_t>> AlertMatches();

  // The current role map of `runs` (null: all), for `trainwatch roles`.
  Result<RoleMap> Roles(const std::vector<int64_t>* runs);

 private:
  struct Prepared;
  Engine() = default;
  Status RunRule(Prepared& p, std::optional<int64_t> run_id, double now, Evaluation* ev);
  Status Finish(Observation* o, const Rule& r);
  // `worst`: the most severe unmuted, firing severity on the run, or -1 for none.
  Verdict VerdictFor(int64_t run_id, const std::string& run, int worst);
  std::string RunName(int64_t run_id);

  std::unique_ptr<store::Db> db_;
  EngineOptions options_;
  std::vector<Rule> rules_;
  std::vector<std::unique_ptr<Prepared>> prepared_;
  // Statements every evaluation runs per run or per observation, prepared once in Open().
  store::Stmt series_tag_, held_, run_name_, forecast_, json_valid_;
  std::unique_ptr<StepMetrics> step_metrics_;  // W&B trainer steps beside `_step` (step_metric.h)
  std::vector<std::string> load_errors_;
  std::vector<RolePattern> patterns_;
  std::map<int64_t, std::pair<int64_t, int64_t>> last_change_;  // run -> (offsets sum, files)
  std::atomic<bool> cancel_{false}, interrupt_{false};
  bool Stopping() const { return cancel_ || interrupt_; }
  Status Stopped() const { return Internal(cancel_ ? "diagnosis cancelled" : "diagnosis interrupted"); }
  std::unique_ptr<RuleLimits> limits_;  // on db_ (declared after it: removed first)
};

}  // namespace tw::diagnose

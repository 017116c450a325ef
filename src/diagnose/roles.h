// Metric roles: rules speak of `train_loss`, `val_loss`, `lr`, ... and this maps each run's
// tags onto them. Patterns are globs over the tag (case-insensitive; `*` crosses `/`),
// optionally restricted to runs whose name matches a run glob. For each (run, role) the
// series matched by the earliest pattern wins; roles marked multi (per-layer norms) keep every
// matching series. A pattern whose role is `ignore` takes its tags out of every role.
// A tag no pattern matches is read by name (role_inference.h): its guesses that its values
// confirm compete, the most confident winning, for the roles no pattern filled.
// Keras writes training and validation as sibling runs `X/train` and `X/validation` (the TF
// Object Detection API `train/` and `eval/`): the validation sibling's series join the train
// run as val_* roles, and the validation sibling is not diagnosed on its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/db.h"

namespace tw::diagnose {

struct RolePattern {
  std::string role;
  std::string tag_glob;
  std::string run_glob;  // empty: any run; else the run name must match
  std::string why;       // shown by `trainwatch roles`
  bool operator==(const RolePattern&) const = default;
};

// The built-in patterns for the common writers, in priority order.
const std::vector<RolePattern>& DefaultRolePatterns();
// Roles that keep every matching series (per-layer norms).
bool IsMultiRole(const std::string& role);
// Roles played by histogram series (ternary_weights); every other role is a scalar's.
bool IsHistogramRole(const std::string& role);
// Every role the defaults know, for validating config.
std::vector<std::string> KnownRoles();

// User patterns (config [roles]) go first, so they override the defaults.
std::vector<RolePattern> EffectiveRolePatterns(const std::vector<RolePattern>& user);

struct RoleAssignment {
  int64_t run_id = 0;         // the run diagnosed (for Keras validation series: the train run)
  std::string run;            // its name
  std::string role;
  int64_t series_id = 0;
  std::string tag;
  int64_t source_run_id = 0;  // the run holding the series
  std::string why;
  double confidence = 1;      // 1: a pattern named it; below: inferred (role_inference.h)
  int direction = 0;          // +1 higher is better, -1 lower is better, 0 not a quality metric
  // How the rules' messages name the series (role_points.tag): the tag, or for a validation
  // sibling's series the tag under its run ("validation/epoch_loss"), so that a message that
  // compares it with the train run's epoch_loss says which is which. Empty: the tag.
  std::string label;
};

struct RoleMap {
  std::vector<RoleAssignment> assignments;
  // Runs diagnosed on their own (every run except paired Keras validation runs), and, for
  // each run, the run it is diagnosed as (itself, or its train sibling).
  std::vector<int64_t> subjects;
  std::vector<std::pair<int64_t, int64_t>> subject_of;  // (run_id, subject run_id)
};

// Maps the scalar series of `runs` (every run when null), with their Keras partners.
// `subjects` and `subject_of` cover the runs mapped.
Result<RoleMap> AssignRoles(store::Db& db, const std::vector<RolePattern>& patterns,
                            const std::vector<int64_t>* runs = nullptr);

// Keeps temp.run_roles(run_id, role, series_id, tag, source_run_id, why, confidence,
// direction, label) on `db` (works on a read-only connection: temp tables live apart from the
// store): replaces the rows of the subjects in `map`. Also creates the temp views the rules
// read: role_points(run_id, role, series_id, tag, step, wall_time, value, value_class,
// direction) over live (not superseded) points, its tag the assignment's label where it has
// one; direction is the role's (+1 higher is better, -1 lower, 0 neither); and
// val_evals(run_id, role, series_id, tag, direction, step, value), the finite points of the
// validation roles, one per step; run_family(run_id, member), the runs whose hyperparameters
// are a run's; run_planned_steps(run_id, steps), the steps those plan; and
// run_classes(run_id, k, key), the class counts or vocabulary sizes they name.
// The hyperparameter (and W&B config) keys that plan a run's length in steps, as an SQL list:
// run_planned_steps reads them from hparams, the lifecycle facts from the W&B config too.
inline constexpr const char* kPlannedStepKeys =
    "('max_steps', 'total_steps', 'num_training_steps', 'train_steps', 'train_iters', 'max_iter', "
    "'max_iters', 'total_iters', 'num_steps')";

Status WriteRoleTable(store::Db& db, const RoleMap& map);

// The temp views of per-run facts that WriteRoleTable creates and a rule may require a row of
// (its `needs_rows` header): a rule reading K from `run_classes` cannot judge a run without one,
// and `diagnose --explain` says so, with what would give the row.
struct RunFactView {
  std::string name;  // the temp view, keyed by run_id
  std::string what;  // what a run needs for a row there, for --explain
};
const std::vector<RunFactView>& RunFactViews();

bool GlobMatch(const std::string& glob, const std::string& text);  // case-insensitive

}  // namespace tw::diagnose

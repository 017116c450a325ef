// Role inference for tags no pattern names. Users name their metrics endlessly (`time/iter_ms`,
// `sys/rss_mb`, `Loss/classification_loss`, `lm loss`, `val/mIoU`, `'Training loss '`), so the
// tag is split into tokens and read for
//   - a phase: train (train, training, trn, batch) or validation (val, valid, eval, dev, test);
//   - a quantity: loss (loss, nll, ce, xent, l1, mse, ...), accuracy, a score where higher is
//     better (iou, map, f1, auc, bleu, ...), lr, gradient or weight norm, time, throughput,
//     memory, epoch;
//   - units (ms, s, mb, gb) and words that rule a role out (a loss *scale*, an *eta*, a *total*
//     time, a GPU's memory *utilization*, a reward, an ELBO, which is maximised).
// Each guess has a confidence (how specific the name is) and is then checked against the
// series' own values: an LR is non-negative and schedule-shaped, a step time positive and not a
// clock, memory non-negative, an accuracy within [0, 100], a counter is no loss.
// Pure functions: no store, no state; roles.cc reads the values and decides.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tw::diagnose {

// +1 higher is better (accuracy, mIoU), -1 lower is better (losses), 0 not a quality metric.
int RoleDirection(const std::string& role);

// Lower-cased tokens of a tag: split at anything not a letter or digit, at camelCase humps
// ("trainLoss" -> train, loss) and at letter/digit borders ("mAP50" -> map, 50); each whole
// segment between punctuation is kept as well ("mIoU" -> miou, m, iou).
std::vector<std::string> TagTokens(const std::string& tag);

struct RoleGuess {
  std::string role;
  double confidence = 0;  // in (0, 1); patterns named by a user or a writer count as 1
  std::string why;        // the tokens that decided it
};

// The roles a tag's name suggests, most confident first; empty when it suggests none.
// `validation_run`: the series belongs to a validation sibling run (Keras `X/validation`, the TF
// Object Detection API's `eval/`), so a tag without a phase of its own is about validation.
std::vector<RoleGuess> GuessRoles(const std::string& tag, bool validation_run);

// Tags that role inference reads as `role`, for roles no exact built-in pattern names (the
// activation statistics, the QAT losses, ternary weight histograms): examples for
// `diagnose --explain`. Empty for other roles.
std::vector<std::string> InferredExampleTags(const std::string& role);

// The histogram roles a histogram series' tag suggests (a ternary layer's weights).
std::vector<RoleGuess> GuessHistogramRoles(const std::string& tag);

// What a series' values look like (its first points in step order suffice).
struct SeriesShape {
  int64_t points = 0;   // all points, non-finite included
  int64_t finite = 0;
  double min = 0, max = 0;      // of the finite values
  bool integers = true;         // every finite value is a whole number
  double nondecreasing = 0;     // share of consecutive finite pairs with next >= previous
  double turns = 0;             // share of consecutive changes that reverse direction
};
// `values` in step order, non-finite ones included.
SeriesShape MeasureShape(const std::vector<double>& values);

// Empty when the values fit `role`; else why not, e.g. "a clock: never goes down".
std::string ShapeObjection(const std::string& role, const SeriesShape& shape);

}  // namespace tw::diagnose

// Robust numerics for the diagnosis rules: pure functions over plain vectors, no SQLite.
// The rules (sql/rules/*.sql) hold the judgement; these hold the arithmetic, tested alone
// (tests/diagnose_stats_test.cc). sql_functions.cc exposes them to SQL.
//
// Conventions: inputs are finite (callers drop NaN/Inf first); an empty or too-short input
// gives NaN (or an empty/false result), never a crash. Series are ordered by step.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace tw::diagnose::stats {

// Median (mean of the two middle values for even n). NaN when empty.
double Median(std::span<const double> x);
// Median absolute deviation from `center` (raw, not scaled by 1.4826). NaN when empty.
double Mad(std::span<const double> x, double center);
// Linear-interpolated quantile, q in [0, 1] (numpy's default). NaN when empty.
double Quantile(std::span<const double> x, double q);

// Point-to-point noise: the robust SD (1.4826 MAD) of second differences over sqrt(6). Second
// differences cancel a local linear trend, so a curve's own slope (or a sawtooth's rise) is not
// counted as noise; for iid noise SD(d2) = sqrt(6) sd. NaN below 3 points.
double NoiseSd(std::span<const double> y);

// Where a flat stretch turns into a rise: the least-squares fit of the continuous hinge
// y = a + b * max(0, x - x[k]) over every k (exactly, with suffix sums: O(n)), keeping b > 0.
// Returns k, or -1 when fewer than 8 points or no rising hinge fits. x must be increasing.
int64_t HingeOnset(std::span<const double> x, std::span<const double> y);

// Exponential moving average with smoothing factor alpha in (0, 1]; out[0] = x[0].
std::vector<double> Ema(std::span<const double> x, double alpha);

// Theil–Sen slope of y on x: the median of pairwise slopes over pairs with distinct x.
// Above 2,000 points, a deterministic subsample of evenly spaced points keeps it O(n^2) bounded.
// NaN when fewer than 2 distinct x.
double TheilSenSlope(std::span<const double> x, std::span<const double> y);

// Above `cap` points: the medians of `cap` contiguous bins, x and y each, so that an O(n^2)
// estimator uses every point (a bin's median is less noisy than one point) rather than a
// subsample. Up to `cap` points: the series as it is.
struct Binned {
  std::vector<double> x, y;
};
Binned BinnedMedians(std::span<const double> x, std::span<const double> y, size_t cap = 2000);

// Mann–Kendall trend test: the normal z of S (with continuity correction and the variance
// correction for ties). Positive: increasing. Above 2,000 points, a deterministic subsample.
// 0 when fewer than 3 points.
double MannKendallZ(std::span<const double> y);

// Bartels' rank von Neumann test of serial dependence: the mean squared difference of
// successive ranks over their variance is 2 for independent values (white noise, a batch's
// sampling noise), below 2 when neighbours are alike (swings longer than the logging
// interval, a trend) and above 2 when they alternate (a period of 2-3 points). Returns
// (2 - ratio) / its standard deviation under independence: ~N(0, 1) for noise, positive for
// slow swings, negative for alternation. Rank-based, so a few spikes cannot fake it. 0 below
// 10 values or when every value is the same.
double RankVonNeumannZ(std::span<const double> y);

// Trailing robust z: for each i >= window, with m and d the median and MAD of
// x[i-window, i), z[i] = 0.6745 * (x[i] - level[i]) / d (Iglewicz–Hoaglin modified z), where
// level[i] is m, or the median of the window's last tenth (5 points at least) where that is
// higher: a rising curve leaves the window's median behind. d is at most the window's
// point-to-point noise (NoiseSd as a MAD, refreshed every tenth of a window), which a trend
// does not inflate: a steady descent spreads a window far beyond its noise, and a spike on it
// would otherwise read as a small z.
// When d is 0 (a constant window) d is replaced by max(1e-12, 1e-6 * |m|), so a constant
// stretch followed by a jump reads as a large z rather than a division by zero.
// Entries before `window` are NaN. O(n * window log window) is fine for window <= 1000.
struct TrailingZ {
  std::vector<double> z;
  std::vector<double> level;
};
TrailingZ TrailingRobustZ(std::span<const double> x, int window);

// Spikes judged against the curve on both sides, for short curves (an epoch or an evaluation
// per point) where a trailing window would hold too few points or mostly trend: a point is a
// spike when it stands above the higher of the medians of the k points before it and the k
// after it by more than `z` times the curve's point-to-point noise (NoiseSd: second
// differences cancel the trend, so a steady descent or rise is not noise) and by at least
// `min_rise` (in y's units). Needing both sides below makes a steady rise or fall, and a
// step that stays up, no spike; only points with k neighbours each side are judged.
// `recovered`: the level after is back within `recover_tol` (or 3 noise SDs of a median of k
// points) of the level before. Consecutive spike points are one spike, at their highest z.
struct LocalSpike {
  size_t index = 0;
  double level = 0, z = 0;
  bool recovered = true;
};
// Rises of at least `frequent_min_rise` over the lower envelope (the higher of the lowest
// points of each side) are measured from it, against the noise of the points not raised by
// `min_rise` over theirs, when that noise is under half the curve's: spikes that recur (a bad
// shard every fourth batch) would otherwise be read as the curve's noise, and a spike half gone
// at the next point lifts the side medians of its neighbours. Large rises only: heavy-tailed
// noise would lose its own tail the same way.
std::vector<LocalSpike> LocalSpikes(std::span<const double> y, size_t k, double z, double min_rise,
                                    double recover_tol,
                                    double frequent_min_rise = std::numeric_limits<double>::infinity());

// One-sided upper CUSUM (Page): S_0 = 0, S_i = max(0, S_{i-1} + (x_i - mean)/sd - k).
// Returns the first index where S_i > h, or -1. `onset` (if given) receives the index where
// the run of positive S that crossed began (the change point estimate), or -1.
int64_t CusumUp(std::span<const double> x, double mean, double sd, double k, double h,
                int64_t* onset = nullptr);

// L(t) = e + a * t^(-alpha), fitted by least squares: alpha on a grid (0.02 to 3, then refined),
// e and a by linear least squares for each alpha, with a >= 0 (and e free). Needs >= 8
// points with t > 0. `rmse` is the residual root mean square; `r2` the coefficient of
// determination. ok = false when it cannot be fitted.
struct PowerLaw {
  bool ok = false;
  double e = 0, a = 0, alpha = 0, rmse = 0, r2 = 0;
  double Predict(double t) const;
};
PowerLaw FitPowerLaw(std::span<const double> t, std::span<const double> y);

// The dominant period of a series in samples, from the autocorrelation of its first
// differences, searched over [min_period, max_period]; strength is that autocorrelation
// (in [-1, 1]). period = 0 when nothing stands out (strength < 0.2) or the series is shorter
// than 3 * min_period.
struct Period {
  int64_t period = 0;
  double strength = 0;
  // The lowest autocorrelation at the lags short of the period (1 .. period - 1): negative
  // where the curve turns around within a period (a swing's half period), positive at every
  // short lag for a curve that is merely smooth. 0 when no period was found.
  double trough = 0;
};
Period DominantPeriod(std::span<const double> y, int64_t min_period, int64_t max_period);

// Best-so-far with a relative improvement threshold (Keras/PyTorch ReduceLROnPlateau,
// EarlyStopping "rel" mode). A value improves when it is below best * (1 - min_delta_rel)
// for minimizing (for values <= 0 the threshold is best - |best| * min_delta_rel). Returns
// the first index after which nothing beats the lowest value so far by that threshold (the
// lowest value up to there is `best`), and how many points followed it. With a threshold of
// 0 that is the first occurrence of the minimum.
struct BestSoFar {
  int64_t best_index = -1;
  double best = 0;
  int64_t since = 0;  // points after best_index
};
BestSoFar BestSoFarMin(std::span<const double> y, double min_delta_rel);

// Where swinging began: the index that splits the curve's squared deviation from its own
// centered rolling median, `period` points wide, into a quiet part and a swinging part (least
// squares, two constant levels, the later one higher). The median of one swing period sits at
// the swing's centre, while a monotone descent's centred median is the point itself, so the
// deviation is ~0 until the swinging starts. y should already be lightly smoothed. -1 when y
// is shorter than 2 * period + 10 or nothing rises.
int64_t SwingOnset(std::span<const double> y, size_t period);

// An epoch effect seen across all epochs at once, for curves too noisy to show it at any one
// boundary. The trend is removed with a moving average exactly one epoch wide (a pattern that
// repeats every epoch averages out of it); the residuals are folded by their phase within
// their epoch (0 at a boundary, 1 just before the next); `z` compares the first fifth of the
// epochs with the last fifth (Welch): positive when the curve sits higher just after a
// boundary than just before it. `control_z` does the same half an epoch later (phase 0.5), where
// an epoch effect has no edge. `effect` is the mean difference, in y's units. `epoch_points`
// is the median epoch length in points; ok is false with fewer than 2 epochs of 5 points or
// too few points in a group.
struct EpochFold {
  bool ok = false;
  double z = 0, control_z = 0, effect = 0;
  size_t epoch_points = 0;
};
EpochFold FoldedEpochContrast(std::span<const double> x, std::span<const double> y,
                              std::span<const double> boundaries);

// Where a histogram's mass lies against zero: the shares of its count whose bucket (midpoint,
// held within [lo, hi], the histogram's min and max) lies within `tol` x max(|lo|, |hi|) of zero,
// below it, and above it. A ternary layer's weights are {-a, 0, +a}: whatever the bucketing
// (TensorFlow's exponential limits, W&B's 64 even bins), each value's bucket sits at its own
// third. All zero (lo = hi = 0) is all mass at zero. ok is false with no positive count or
// buckets that are not (left, right, count) triples of finite numbers.
struct HistShares {
  bool ok = false;
  double count = 0, zero = 0, negative = 0, positive = 0;
};
// `triples`: left, right, count, ... (the store's histogram buckets).
HistShares HistogramShares(std::span<const double> triples, double lo, double hi, double tol);

}  // namespace tw::diagnose::stats

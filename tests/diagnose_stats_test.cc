#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "diagnose/stats.h"

namespace tw::diagnose::stats {
namespace {

using Vec = std::vector<double>;

// The textbook definition, O(n * lag), as an independent check on the FFT-based search.
double DiffAcf(const Vec& y, size_t lag) {
  Vec d(y.size() - 1);
  double mean = 0;
  for (size_t i = 0; i < d.size(); ++i) mean += (d[i] = y[i + 1] - y[i]);
  mean /= static_cast<double>(d.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    den += (d[i] - mean) * (d[i] - mean);
    if (i + lag < d.size()) num += (d[i] - mean) * (d[i + lag] - mean);
  }
  return num / den;
}

Vec Noise(size_t n, double sd, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0, sd);
  Vec v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// ---- Median, Mad, Quantile ----

TEST(Stats, MedianKnownAnswers) {
  EXPECT_DOUBLE_EQ(Median(Vec{3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median(Vec{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median(Vec{7}), 7);
  EXPECT_DOUBLE_EQ(Median(Vec{5, 5, 5, 5}), 5);
  EXPECT_DOUBLE_EQ(Median(Vec{-1, 100, 2, 1e9, 3}), 3);
  EXPECT_TRUE(std::isnan(Median(Vec{})));
}

TEST(Stats, MedianOfHugeValuesDoesNotOverflow) {
  EXPECT_DOUBLE_EQ(Median(Vec{1.5e308, 1.7e308}), 1.6e308);
  EXPECT_DOUBLE_EQ(Median(Vec{-1.7e308, 1.7e308}), 0);
}

TEST(Stats, MadKnownAnswers) {
  // Deviations from 3: {2, 1, 0, 1, 97}; the outlier does not move the median deviation.
  EXPECT_DOUBLE_EQ(Mad(Vec{1, 2, 3, 4, 100}, 3), 1);
  // Deviations from 2.5: {1.5, 0.5, 0.5, 1.5}.
  EXPECT_DOUBLE_EQ(Mad(Vec{1, 2, 3, 4}, 2.5), 1);
  // Deviations from 2: {1, 1, 0, 0, 2, 4, 7}.
  EXPECT_DOUBLE_EQ(Mad(Vec{1, 1, 2, 2, 4, 6, 9}, 2), 1);
  EXPECT_DOUBLE_EQ(Mad(Vec{4, 4, 4}, 4), 0);
  EXPECT_DOUBLE_EQ(Mad(Vec{4}, 1), 3);
  EXPECT_TRUE(std::isnan(Mad(Vec{}, 0)));
}

TEST(Stats, QuantileMatchesNumpyLinear) {
  const Vec x{4, 1, 3, 2};  // sorted 1 2 3 4; position h = 3q
  EXPECT_DOUBLE_EQ(Quantile(x, 0), 1);
  EXPECT_DOUBLE_EQ(Quantile(x, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(Quantile(x, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(Quantile(x, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(Quantile(x, 1), 4);
  // np.quantile([10, 20, 30, 40, 50], 0.1) == 14.
  EXPECT_DOUBLE_EQ(Quantile(Vec{50, 10, 40, 20, 30}, 0.1), 14);
}

TEST(Stats, QuantileEdges) {
  EXPECT_TRUE(std::isnan(Quantile(Vec{}, 0.5)));
  EXPECT_DOUBLE_EQ(Quantile(Vec{5}, 0.3), 5);
  EXPECT_DOUBLE_EQ(Quantile(Vec{2, 2, 2}, 0.7), 2);
  EXPECT_DOUBLE_EQ(Quantile(Vec{1, 2, 3}, -1), 1);  // clamped into [0, 1]
  EXPECT_DOUBLE_EQ(Quantile(Vec{1, 2, 3}, 2), 3);
  EXPECT_TRUE(std::isnan(Quantile(Vec{1, 2, 3}, std::nan(""))));
  EXPECT_DOUBLE_EQ(Quantile(Vec{-1.7e308, 1.7e308}, 0.5), 0);
}

// ---- Ema ----

TEST(Stats, EmaKnownAnswers) {
  const Vec out = Ema(Vec{1, 2, 3}, 0.5);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_DOUBLE_EQ(out[0], 1);
  EXPECT_DOUBLE_EQ(out[1], 1.5);
  EXPECT_DOUBLE_EQ(out[2], 2.25);
  EXPECT_EQ(Ema(Vec{3, -1, 8}, 1.0), (Vec{3, -1, 8}));
  EXPECT_TRUE(Ema(Vec{}, 0.3).empty());
  EXPECT_EQ(Ema(Vec{42}, 0.3), Vec{42});
}

TEST(Stats, EmaFollowsTheRecurrence) {
  const Vec x = Noise(500, 3, 11);
  const double alpha = 0.1;
  const Vec out = Ema(x, alpha);
  double s = x[0];
  for (size_t i = 0; i < x.size(); ++i) {
    if (i > 0) s = alpha * x[i] + (1 - alpha) * s;
    ASSERT_NEAR(out[i], s, 1e-12) << i;
  }
}

// ---- Theil–Sen ----

TEST(Stats, BinnedMediansKeepShortSeriesAndTakeBinMediansOfLongOnes) {
  const Vec x{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, y{5, 1, 2, 9, 3, 3, 0, 4, 7, 7};
  Binned same = BinnedMedians(x, y, 10);
  EXPECT_EQ(same.x, x);
  EXPECT_EQ(same.y, y);
  Binned five = BinnedMedians(x, y, 5);
  EXPECT_EQ(five.x, (Vec{0.5, 2.5, 4.5, 6.5, 8.5}));
  EXPECT_EQ(five.y, (Vec{3, 5.5, 3, 2, 7}));
}

// The point of binning: over a long flat series, a slope through 2,000 bin medians scatters
// far less than one through 2,000 sampled points, because every point is used.
TEST(Stats, TheilSenThroughBinMediansScattersLessThanThroughASubsample) {
  const size_t n = 20000;
  Vec x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<double>(i);
  double sub2 = 0, bin2 = 0;
  const int reps = 30;
  for (int k = 0; k < reps; ++k) {
    const Vec y = Noise(n, 1.0, 100 + static_cast<unsigned>(k));
    const double sub = TheilSenSlope(x, y) * static_cast<double>(n);  // subsamples 2,000
    const Binned b = BinnedMedians(x, y, 2000);
    const double bin = TheilSenSlope(b.x, b.y) * static_cast<double>(n);
    sub2 += sub * sub;
    bin2 += bin * bin;
  }
  // Bins of 10: a median's variance is about 1.4 / 10 of a point's, so the scatter is ~0.37x.
  EXPECT_LT(std::sqrt(bin2 / sub2), 0.6) << "subsample rms " << std::sqrt(sub2 / reps) << ", binned rms "
                                         << std::sqrt(bin2 / reps);
}

TEST(Stats, FoldedEpochContrastSeesASawtoothUnderNoiseAndNotATrendOrNoise) {
  const size_t n = 600, per = 30;
  Vec x(n), saw(n), trend(n), bounds;
  const Vec noise = Noise(n, 0.15, 7);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<double>(i);
    const double phase = static_cast<double>(i % per) / per;
    trend[i] = -0.002 * static_cast<double>(i) + noise[i];
    saw[i] = trend[i] + 0.2 * (1 - phase);
  }
  for (size_t b = per; b < n; b += per) bounds.push_back(static_cast<double>(b));
  EpochFold f = FoldedEpochContrast(x, saw, bounds);
  ASSERT_TRUE(f.ok);
  EXPECT_EQ(f.epoch_points, per);
  EXPECT_GT(f.z, 6);
  EXPECT_NEAR(f.effect, 0.2 * 0.8, 0.05);  // phase ~0.1 against ~0.9
  EXPECT_LT(std::fabs(f.control_z), f.z / 2.5);
  EpochFold t = FoldedEpochContrast(x, trend, bounds);
  ASSERT_TRUE(t.ok);
  EXPECT_LT(std::fabs(t.z), 4) << "a trend is removed by the one-epoch moving average";
  EXPECT_FALSE(FoldedEpochContrast(x, saw, Vec{300}).ok) << "one boundary is not a period";
}

TEST(Stats, SwingOnsetFindsWhereADescentTurnsIntoSwings) {
  Vec y;
  for (int i = 0; i < 400; ++i)
    y.push_back(i < 150 ? 2.0 - 0.01 * i : 0.5 + 0.4 * std::sin(2 * std::numbers::pi * (i - 150) / 40.0));
  const int64_t k = SwingOnset(y, 40);
  EXPECT_NEAR(static_cast<double>(k), 150, 10);
  Vec descent(400);
  for (size_t i = 0; i < descent.size(); ++i) descent[i] = 2.0 - 0.004 * static_cast<double>(i);
  EXPECT_EQ(SwingOnset(descent, 40), -1) << "a monotone curve never leaves its centred median";
  EXPECT_EQ(SwingOnset(Vec(50, 1.0), 40), -1) << "too short";
}

TEST(Stats, TheilSenIgnoresOutliers) {
  Vec x, y;
  for (int i = 0; i <= 20; ++i) {
    x.push_back(i);
    y.push_back(2.0 * i + 1);
  }
  // 57 of the 210 pairs touch an outlier: too few to reach the middle of the sorted slopes.
  y[3] += 100;
  y[10] -= 80;
  y[17] += 500;
  EXPECT_DOUBLE_EQ(TheilSenSlope(x, y), 2);
}

TEST(Stats, TheilSenEvenPairCountAveragesTheMiddleSlopes) {
  // Pairwise slopes: (0,1) 1, (0,2) 2, (1,2) 3, (0,3) 1, (1,3) 1, (2,3) -1 -> median of
  // {-1, 1, 1, 1, 2, 3} is 1; and with points reversed in x the answer must not change.
  EXPECT_DOUBLE_EQ(TheilSenSlope(Vec{0, 1, 2, 3}, Vec{0, 1, 4, 3}), 1);
  EXPECT_DOUBLE_EQ(TheilSenSlope(Vec{3, 2, 1, 0}, Vec{3, 4, 1, 0}), 1);
  // {0, 1, 5, 6} -> slopes 1, 2.5, 2, 4, 2.5, 1 -> median (2 + 2.5) / 2.
  EXPECT_DOUBLE_EQ(TheilSenSlope(Vec{0, 1, 2, 3}, Vec{0, 1, 5, 6}), 2.25);
}

TEST(Stats, TheilSenEdges) {
  EXPECT_TRUE(std::isnan(TheilSenSlope(Vec{}, Vec{})));
  EXPECT_TRUE(std::isnan(TheilSenSlope(Vec{1}, Vec{1})));
  EXPECT_TRUE(std::isnan(TheilSenSlope(Vec{2, 2, 2}, Vec{1, 5, 9})));  // no distinct x
  EXPECT_DOUBLE_EQ(TheilSenSlope(Vec{2, 2, 4}, Vec{1, 5, 9}), 3);      // slopes 4 and 2
  EXPECT_DOUBLE_EQ(TheilSenSlope(Vec{0, 1, 2, 3}, Vec{5, 5, 5, 5}), 0);
}

TEST(Stats, TheilSenSubsamplesLongSeries) {
  Vec x(100000), y(100000);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<double>(i);
    y[i] = -0.25 * x[i] + 7;
  }
  y[50000] = 1e9;  // the subsample may or may not include it; either way the slope stands
  EXPECT_DOUBLE_EQ(TheilSenSlope(x, y), -0.25);
}

// ---- Mann–Kendall ----

TEST(Stats, MannKendallStrictlyMonotone) {
  Vec up, down;
  for (int i = 0; i < 10; ++i) {
    up.push_back(i * 1.5);
    down.push_back(-i * 1.5);
  }
  // S = 45, Var = 10 * 9 * 25 / 18 = 125.
  EXPECT_NEAR(MannKendallZ(up), 44 / std::sqrt(125.0), 1e-12);
  EXPECT_NEAR(MannKendallZ(down), -44 / std::sqrt(125.0), 1e-12);
}

// ---- rank von Neumann ----

TEST(Stats, RankVonNeumannByHand) {
  // 1..10 in order: successive ranks differ by 1, so the ratio is 9 / 82.5; the variance
  // under independence is 4 * 8 * 471 / (5 * 10 * 11 * 81).
  Vec up;
  for (int i = 0; i < 10; ++i) up.push_back(i);
  const double sd = std::sqrt(4.0 * 8 * 471 / (5.0 * 10 * 11 * 81));
  EXPECT_NEAR(RankVonNeumannZ(up), (2 - 9 / 82.5) / sd, 1e-12);
  EXPECT_EQ(RankVonNeumannZ(Vec(20, 1.0)), 0);  // no spread: nothing to test
  EXPECT_EQ(RankVonNeumannZ(Vec{1, 2, 3}), 0);   // too short
}

TEST(Stats, RankVonNeumannTellsSwingsFromNoise) {
  // Independent noise, spiky noise: within chance, for every seed.
  for (unsigned seed = 1; seed <= 20; ++seed) {
    Vec y = Noise(300, 0.3, seed);
    EXPECT_LT(std::abs(RankVonNeumannZ(y)), 3.5) << seed;
    for (size_t i = 7; i < y.size(); i += 23) y[i] += 3;  // 10x spikes in log units
    EXPECT_LT(std::abs(RankVonNeumannZ(y)), 3.5) << seed;
  }
  // A swing of period 12 under the same noise: neighbours alike.
  Vec slow = Noise(300, 0.3, 7), fast = Noise(300, 0.3, 8);
  for (size_t i = 0; i < slow.size(); ++i) {
    slow[i] += 0.5 * std::sin(2 * std::numbers::pi * static_cast<double>(i) / 12);
    fast[i] += (i % 2 ? 0.5 : -0.5);  // period 2: neighbours alternate
  }
  EXPECT_GT(RankVonNeumannZ(slow), 5);
  EXPECT_LT(RankVonNeumannZ(fast), -5);
}

TEST(Stats, MannKendallWithTies) {
  // {1, 2, 2, 3}: S = 5 (the 2-2 pair is 0); Var = (4*3*13 - 2*1*9) / 18 = 138/18.
  EXPECT_NEAR(MannKendallZ(Vec{1, 2, 2, 3}), 4 / std::sqrt(138.0 / 18), 1e-12);
  // {3, 1, 1, 1, 2}: S = -4 (from the 3) + 3 (each 1 before the 2) = -1, and the continuity
  // correction takes |S| = 1 to 0.
  EXPECT_DOUBLE_EQ(MannKendallZ(Vec{3, 1, 1, 1, 2}), 0);
  // {1, 1, 2, 2, 2}: S = 6; ties 18 + 66 = 84; Var = (300 - 84) / 18 = 12.
  EXPECT_NEAR(MannKendallZ(Vec{1, 1, 2, 2, 2}), 5 / std::sqrt(12.0), 1e-12);
}

TEST(Stats, MannKendallEdges) {
  EXPECT_EQ(MannKendallZ(Vec{}), 0);
  EXPECT_EQ(MannKendallZ(Vec{1}), 0);
  EXPECT_EQ(MannKendallZ(Vec{1, 2}), 0);
  EXPECT_EQ(MannKendallZ(Vec{4, 4, 4, 4}), 0);  // Var = 0
  EXPECT_EQ(MannKendallZ(Vec{1, 3, 2}), 0);     // S = +1 + 1 - 1 = 1 -> (1 - 1) / sd = 0
}

TEST(Stats, MannKendallSubsamplesToTwoThousandPoints) {
  Vec up(100000);
  for (size_t i = 0; i < up.size(); ++i) up[i] = std::log1p(static_cast<double>(i));
  // Strictly increasing, so the 2,000-point subsample has S = n(n-1)/2 and no ties.
  const double n = 2000, s = n * (n - 1) / 2;
  EXPECT_NEAR(MannKendallZ(up), (s - 1) / std::sqrt(n * (n - 1) * (2 * n + 5) / 18), 1e-9);
}

TEST(Stats, MannKendallNoiseIsNotATrend) {
  EXPECT_LT(std::abs(MannKendallZ(Noise(1000, 1, 5))), 3.0);
}

// ---- Trailing robust z ----

TEST(Stats, TrailingRobustZKnownAnswers) {
  const Vec x{1, 2, 3, 4, 5, 10};
  TrailingZ t = TrailingRobustZ(x, 5);
  ASSERT_EQ(t.z.size(), 6u);
  ASSERT_EQ(t.level.size(), 6u);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(std::isnan(t.z[i]) && std::isnan(t.level[i])) << i;
  // Window {1..5}: median 3, MAD 1.
  EXPECT_DOUBLE_EQ(t.level[5], 3);
  EXPECT_DOUBLE_EQ(t.z[5], 0.6745 * 7);

  // Even window {1,2,3,4}: median 2.5, MAD 1; then {2,3,4,5}: median 3.5, MAD 1.
  t = TrailingRobustZ(x, 4);
  EXPECT_DOUBLE_EQ(t.level[4], 2.5);
  EXPECT_DOUBLE_EQ(t.z[4], 0.6745 * 2.5);
  EXPECT_DOUBLE_EQ(t.level[5], 3.5);
  EXPECT_DOUBLE_EQ(t.z[5], 0.6745 * 6.5);
}

TEST(Stats, TrailingRobustZConstantWindow) {
  Vec x(11, 5.0);
  x.push_back(6);
  TrailingZ t = TrailingRobustZ(x, 10);
  EXPECT_DOUBLE_EQ(t.z[10], 0);
  EXPECT_DOUBLE_EQ(t.level[10], 5);
  EXPECT_NEAR(t.z[11], 0.6745 * 1 / 5e-6, 1e-3);  // d = 1e-6 * |5|

  Vec zeros(10, 0.0);
  zeros.push_back(1);
  t = TrailingRobustZ(zeros, 10);
  EXPECT_NEAR(t.z[10], 0.6745e12, 1);  // d = 1e-12 floor
}

// ---- Local spikes (both sides, in units of point-to-point noise) ----

TEST(Stats, LocalSpikesFindsAPointAboveBothSides) {
  // A steady descent with alternating noise and one point 1.0 above its neighbours.
  Vec y;
  for (int i = 0; i < 20; ++i) y.push_back(5 - 0.1 * i + (i % 2 ? 0.01 : -0.01));
  y[12] += 1.0;
  auto s = LocalSpikes(y, 2, 7, 0.4, 0.2);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].index, 12u);
  // The level is the higher side (the one before, on a descent): the mean of y[10] and y[11].
  EXPECT_NEAR(s[0].level, 0.5 * (y[10] + y[11]), 1e-12);
  EXPECT_GT(s[0].z, 7);
  EXPECT_TRUE(s[0].recovered);
  // The same rise, but smaller than min_rise: no spike; nor with a z threshold above its z.
  EXPECT_TRUE(LocalSpikes(y, 2, 7, 1.5, 0.2).empty());
  EXPECT_TRUE(LocalSpikes(y, 2, s[0].z + 1, 0.4, 0.2).empty());
}

TEST(Stats, LocalSpikesIgnoresTrendsStepsAndEdges) {
  // A steep descent and a steep rise are no spikes: a point is never above both sides.
  Vec down, up;
  for (int i = 0; i < 30; ++i) down.push_back(std::exp(-0.3 * i) + 0.001 * (i % 3));
  for (int i = 0; i < 30; ++i) up.push_back(0.2 * i * i + 0.001 * (i % 3));
  EXPECT_TRUE(LocalSpikes(down, 2, 5, 0.01, 0.1).empty());
  EXPECT_TRUE(LocalSpikes(up, 2, 5, 0.01, 0.1).empty());
  // A step up that stays: the side after is as high as the point.
  Vec step(30, 1.0);
  for (int i = 0; i < 30; ++i) step[i] += 0.01 * (i % 2) + (i >= 15 ? 2.0 : 0.0);
  EXPECT_TRUE(LocalSpikes(step, 2, 5, 0.1, 0.1).empty());
  // The first and last k points have no full side: not judged.
  Vec edge(12, 1.0);
  for (int i = 0; i < 12; ++i) edge[i] += 0.01 * (i % 2);
  edge[1] = edge[10] = 9;
  EXPECT_TRUE(LocalSpikes(edge, 2, 5, 0.1, 0.1).empty());
  // Too short, or no noise to count in: nothing.
  EXPECT_TRUE(LocalSpikes(Vec{1, 2, 9, 2, 1, 0}, 2, 5, 0.1, 0.1).empty());
  EXPECT_TRUE(LocalSpikes(Vec(20, 3.0), 2, 5, 0.1, 0.1).empty());
}

TEST(Stats, LocalSpikesThatDidNotRecover) {
  // A spike after which the curve settles higher than before: not recovered.
  Vec y;
  for (int i = 0; i < 20; ++i) y.push_back(1 + (i % 2 ? 0.01 : -0.01) + (i >= 11 ? 0.5 : 0.0));
  y[10] = 4;
  auto s = LocalSpikes(y, 2, 7, 0.4, 0.1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].index, 10u);
  EXPECT_FALSE(s[0].recovered);
  // Within recover_tol of the level before: recovered.
  EXPECT_TRUE(LocalSpikes(y, 2, 7, 0.4, 0.6)[0].recovered);
}

TEST(Stats, LocalSpikesThatRecurEveryFourthPoint) {
  // A flat log-loss with a little noise and a 3.0 (20x) jump on every fourth point: the jumps
  // spoil most second differences, so against the MAD of all of them none stands out.
  Vec y;
  for (int i = 0; i < 40; ++i) y.push_back(0.01 * ((i * 7) % 5 - 2) + ((i + 1) % 4 == 0 ? 3.0 : 0.0));
  EXPECT_TRUE(LocalSpikes(y, 2, 7, 0.4, 0.2).empty());
  // Judged against the noise of the other points (rises of at least log 10 only): each one.
  const auto s = LocalSpikes(y, 2, 7, 0.4, 0.2, std::log(10.0));
  ASSERT_EQ(s.size(), 9u);  // the last jump has no two points after it
  for (size_t j = 0; j < s.size(); ++j) EXPECT_EQ(s[j].index, 4 * j + 3) << j;
  // Rises below that floor keep the ordinary noise: 3x jumps stay unjudged by the quiet noise.
  for (double& v : y) v = v > 1 ? std::log(3.0) : v;
  EXPECT_TRUE(LocalSpikes(y, 2, 7, 0.4, 0.2, std::log(10.0)).empty());
}

TEST(Stats, LocalSpikesThatTakeTwoPointsToComeBack) {
  // A log-loss falling steadily (-0.5 per point) with a jump of +5 on every third point that is
  // only half gone at the next (BatchNorm's running statistics dragged off before an
  // evaluation): each jump's tail sits in the next jump's near side, so against the medians of
  // the sides the jumps are 4-6x, and the curve's second differences are all jumps.
  Vec y;
  for (int i = 0; i < 15; ++i) y.push_back(-0.5 * i + 0.02 * ((i * 7) % 5 - 2));
  for (int i = 2; i < 15; i += 3) {
    y[i] += 5;
    if (i + 1 < 15) y[i + 1] += 2.5;
  }
  EXPECT_TRUE(LocalSpikes(y, 2, 7, 0.4, 0.2).empty());
  // From the lower envelope (the lowest point of each side), against the noise of the points
  // not raised at all: each jump that has two points after it.
  const auto s = LocalSpikes(y, 2, 7, 0.4, 0.2, std::log(10.0));
  ASSERT_EQ(s.size(), 4u);
  for (size_t j = 0; j < s.size(); ++j) {
    EXPECT_EQ(s[j].index, 3 * j + 2) << j;
    EXPECT_TRUE(s[j].recovered) << j;
    const size_t i = s[j].index;
    EXPECT_NEAR(s[j].level, std::max(std::min(y[i - 2], y[i - 1]), std::min(y[i + 1], y[i + 2])), 1e-12) << j;
  }
}

TEST(Stats, LocalSpikesNearZeroNoiseIsNoFrequentJump) {
  // A real HF Trainer training loss near its floor (tests/data/real_runs/hf_trainer_healthy,
  // steps 40-500): 0.0038 -> 0.039 -> 0.052 -> 0.023 -> 0.0023 is one of its bounces. The 0.052
  // stands 13.6x above the lowest point of its sides, but the lows are as noisy as the highs,
  // so the quiet points' noise is no smaller than the whole curve's: no jump is judged
  // against it, and against the sides' medians (4x) it is the curve's own noise.
  const Vec loss = {0.7005, 0.696, 0.6895, 0.6559, 0.368, 0.342, 0.2234, 0.2494, 0.2296, 0.2277,
                    0.306, 0.2243, 0.2502, 0.1487, 0.1321, 0.1431, 0.1367, 0.05386, 0.06616, 0.1603,
                    0.1841, 0.1417, 0.08728, 0.03374, 0.04546, 0.1118, 0.04529, 0.04831, 0.04131,
                    0.06337, 0.02349, 0.03144, 0.037, 0.04486, 0.0231, 0.03948, 0.01884, 0.005717,
                    0.01851, 0.0313, 0.04406, 0.02136, 0.00382, 0.03931, 0.05181, 0.02348, 0.002291};
  Vec y;
  for (double v : loss) y.push_back(std::log(v));
  EXPECT_TRUE(LocalSpikes(y, 2, 7, std::log(1.5), std::log(1.25), std::log(10.0)).empty());
}

TEST(Stats, TrailingRobustZFlagsInjectedSpike) {
  Vec x = Noise(1000, 0.01, 3);
  for (double& v : x) v += 2.0;
  x[600] += 1.0;  // ~100 sigma
  const TrailingZ t = TrailingRobustZ(x, 100);
  EXPECT_GT(t.z[600], 8);
  double worst = 0;
  for (size_t i = 100; i < x.size(); ++i) {
    if (i != 600) worst = std::max(worst, std::abs(t.z[i]));
    // The medians shrug the spike off (the level is the higher of two medians of noise: within
    // two noise SDs).
    EXPECT_NEAR(t.level[i], 2.0, 0.02) << i;
  }
  EXPECT_LT(worst, 6);
}

TEST(Stats, TrailingRobustZReadsSpikesOnATrendAgainstTheNoise) {
  // A log-loss falling by 2.0 (7.4x) over 400 points with 5% noise, and 3x spikes every 16
  // points: a 100-point window spreads by its descent (MAD ~0.13) far beyond its noise (0.034
  // as a MAD), and the spikes, 0.85 above the lagging median, would read as z ~4.5. Against the
  // point-to-point noise they stand out.
  Vec x = Noise(400, 0.05, 7);
  for (size_t i = 0; i < x.size(); ++i) x[i] += 2.0 - static_cast<double>(i) / 200 + (i % 16 == 15 ? std::log(3.0) : 0);
  const TrailingZ t = TrailingRobustZ(x, 100);
  for (size_t i = 111; i < x.size(); i += 16) EXPECT_GT(t.z[i], 7) << i;
  // The same curve rising, without spikes: the window's median lags the rise by half of it,
  // but the level is the recent tenth's where that is higher, so no point reads as a spike.
  Vec up = Noise(400, 0.05, 8);
  for (size_t i = 0; i < up.size(); ++i) up[i] += static_cast<double>(i) / 200;
  const TrailingZ u = TrailingRobustZ(up, 100);
  for (size_t i = 100; i < up.size(); ++i) EXPECT_LT(u.z[i], 7) << i;
}

TEST(Stats, TrailingRobustZEdges) {
  TrailingZ t = TrailingRobustZ(Vec{}, 5);
  EXPECT_TRUE(t.z.empty() && t.level.empty());
  for (int window : {3, 4, 1000, 0, -2}) {
    t = TrailingRobustZ(Vec{1, 2, 3}, window);
    ASSERT_EQ(t.z.size(), 3u);
    ASSERT_EQ(t.level.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(t.z[i]) && std::isnan(t.level[i]));
  }
  t = TrailingRobustZ(Vec{1, 2, 3}, 1);  // window of one: m = previous value, MAD 0
  EXPECT_DOUBLE_EQ(t.level[2], 2);
  EXPECT_NEAR(t.z[2], 0.6745 / 2e-6, 1e-3);
}

TEST(Stats, TrailingRobustZLongSeries) {
  Vec x = Noise(100000, 1, 9);
  const TrailingZ t = TrailingRobustZ(x, 100);
  ASSERT_EQ(t.z.size(), x.size());
  EXPECT_TRUE(std::isnan(t.z[99]));
  EXPECT_TRUE(std::isfinite(t.z.back()));
}

// ---- CUSUM ----

TEST(Stats, CusumStepChange) {
  Vec x(300, 0.0);
  x.resize(400, 2.0);
  int64_t onset = 123;
  // S from index 300: 1.5, 3, 4.5, 6 -> first above 5 at 303; the run began at 300.
  EXPECT_EQ(CusumUp(x, 0, 1, 0.5, 5, &onset), 303);
  EXPECT_EQ(onset, 300);
  EXPECT_EQ(CusumUp(x, 0, 1, 0.5, 5), 303);  // onset is optional
}

TEST(Stats, CusumStepChangeInNoise) {
  Vec x = Noise(600, 1, 21);
  for (size_t i = 400; i < x.size(); ++i) x[i] += 2;
  int64_t onset = -1;
  const int64_t alarm = CusumUp(x, 0, 1, 0.5, 8, &onset);
  EXPECT_GE(alarm, 400);
  EXPECT_LT(alarm, 420);
  EXPECT_GE(onset, 390);
  EXPECT_LE(onset, alarm);
}

TEST(Stats, CusumRunResetsAtZero) {
  // Index 2 starts a run (2.5) that index 3 wipes out; the crossing run starts at 6.
  const Vec x{0, 0, 3, -10, 0, 0, 2, 2, 2, 2, 2};
  int64_t onset = -1;
  EXPECT_EQ(CusumUp(x, 0, 1, 0.5, 5, &onset), 9);
  EXPECT_EQ(onset, 6);
}

TEST(Stats, CusumNoAlarm) {
  int64_t onset = 7;
  EXPECT_EQ(CusumUp(Vec(100, 1.0), 1, 0.5, 0.5, 5, &onset), -1);
  EXPECT_EQ(onset, -1);
  EXPECT_EQ(CusumUp(Vec{}, 0, 1, 0.5, 5, &onset), -1);
  EXPECT_EQ(onset, -1);
  // A falling series never accumulates upward evidence.
  EXPECT_EQ(CusumUp(Vec{0, -1, -2, -3, -4}, 0, 1, 0, 1), -1);
  // No positive scale: nothing can be judged.
  EXPECT_EQ(CusumUp(Vec{0, 100, 100}, 0, 0, 0.5, 5, &onset), -1);
  EXPECT_EQ(CusumUp(Vec{0, 100, 100}, 0, -1, 0.5, 5, &onset), -1);
  EXPECT_EQ(onset, -1);
}

// ---- Power law ----

struct Curve {
  Vec t, y;
};
Curve PowerCurve(double e, double a, double alpha, int n, double noise = 0) {
  Curve c;
  std::mt19937 rng(17);
  std::normal_distribution<double> dist(0, noise > 0 ? noise : 1);
  for (int i = 1; i <= n; ++i) {
    c.t.push_back(i * 10.0);
    c.y.push_back(e + a * std::pow(i * 10.0, -alpha) + (noise > 0 ? dist(rng) : 0));
  }
  return c;
}

TEST(Stats, PowerLawRecoversNoiselessParameters) {
  const Curve c = PowerCurve(0.5, 3.0, 0.7, 500);
  const PowerLaw p = FitPowerLaw(c.t, c.y);
  ASSERT_TRUE(p.ok);
  EXPECT_NEAR(p.e, 0.5, 1e-3);
  EXPECT_NEAR(p.a, 3.0, 1e-3);
  EXPECT_NEAR(p.alpha, 0.7, 1e-3);
  EXPECT_LT(p.rmse, 1e-6);
  EXPECT_GT(p.r2, 0.999999);
  EXPECT_NEAR(p.Predict(1e5), 0.5 + 3.0 * std::pow(1e5, -0.7), 1e-4);
  EXPECT_NEAR(p.Predict(10), c.y[0], 1e-5);
}

TEST(Stats, PowerLawWithSmallNoise) {
  const Curve c = PowerCurve(0.5, 3.0, 0.7, 2000, 0.001);
  const PowerLaw p = FitPowerLaw(c.t, c.y);
  ASSERT_TRUE(p.ok);
  EXPECT_NEAR(p.e, 0.5, 0.01);
  EXPECT_NEAR(p.a, 3.0, 0.1);
  EXPECT_NEAR(p.alpha, 0.7, 0.02);
  EXPECT_NEAR(p.rmse, 0.001, 1e-4);  // the residual is the noise
  EXPECT_GT(p.r2, 0.99);
  EXPECT_NEAR(p.Predict(50000), 0.5 + 3.0 * std::pow(50000.0, -0.7), 0.01);
}

TEST(Stats, PowerLawIgnoresNonPositiveTimes) {
  Curve c = PowerCurve(1.0, 2.0, 1.5, 20);
  const PowerLaw clean = FitPowerLaw(c.t, c.y);
  c.t.insert(c.t.begin(), {0.0, -5.0});
  c.y.insert(c.y.begin(), {1e6, -1e6});
  const PowerLaw p = FitPowerLaw(c.t, c.y);
  ASSERT_TRUE(clean.ok && p.ok);
  EXPECT_DOUBLE_EQ(p.alpha, clean.alpha);
  EXPECT_DOUBLE_EQ(p.e, clean.e);
  EXPECT_NEAR(p.alpha, 1.5, 1e-3);
}

TEST(Stats, PowerLawTooFewPoints) {
  const Curve c = PowerCurve(0.5, 3.0, 0.7, 7);
  EXPECT_FALSE(FitPowerLaw(c.t, c.y).ok);
  Vec t = c.t, y = c.y;
  t.push_back(0);  // eight points, but only seven with t > 0
  y.push_back(1);
  EXPECT_FALSE(FitPowerLaw(t, y).ok);
  EXPECT_FALSE(FitPowerLaw(Vec{}, Vec{}).ok);
  EXPECT_FALSE(FitPowerLaw(Vec(20, 3.0), Vec(20, 1.0)).ok);  // one distinct t
  const PowerLaw none;
  EXPECT_TRUE(std::isnan(none.Predict(10)));
}

TEST(Stats, PowerLawEdges) {
  Vec t(30), flat(30, 2.5), rising(30);
  for (int i = 0; i < 30; ++i) {
    t[i] = i + 1;
    rising[i] = i;
  }
  PowerLaw p = FitPowerLaw(t, flat);
  ASSERT_TRUE(p.ok);
  EXPECT_NEAR(p.e, 2.5, 1e-12);
  EXPECT_DOUBLE_EQ(p.a, 0);
  EXPECT_DOUBLE_EQ(p.r2, 0);  // SST = 0
  // A rising curve would need a < 0; clamped, it is a flat line at the mean.
  p = FitPowerLaw(t, rising);
  ASSERT_TRUE(p.ok);
  EXPECT_DOUBLE_EQ(p.a, 0);
  EXPECT_NEAR(p.e, 14.5, 1e-12);
  EXPECT_NEAR(p.r2, 0, 1e-12);
  EXPECT_TRUE(std::isnan(p.Predict(0)));
  EXPECT_TRUE(std::isnan(p.Predict(-3)));
}

TEST(Stats, PowerLawHugeScale) {
  Curve c = PowerCurve(0.5, 3.0, 0.7, 100);
  for (double& v : c.y) v *= 1e300;
  const PowerLaw p = FitPowerLaw(c.t, c.y);
  ASSERT_TRUE(p.ok);
  EXPECT_NEAR(p.e / 1e300, 0.5, 1e-3);
  EXPECT_NEAR(p.a / 1e300, 3.0, 1e-3);
  EXPECT_NEAR(p.alpha, 0.7, 1e-3);
  EXPECT_TRUE(std::isfinite(p.r2));
}

// ---- Dominant period ----

// A training loss: slow decay, a drop at each epoch boundary, and noise.
Vec EpochLoss(size_t n, size_t period, double noise, unsigned seed) {
  Vec y = Noise(n, noise, seed);
  for (size_t i = 0; i < n; ++i)
    y[i] += 3 * std::exp(-static_cast<double>(i) / 800) - 0.1 * static_cast<double>(i / period);
  return y;
}

TEST(Stats, DominantPeriodStaircase) {
  const Vec y = EpochLoss(3000, 50, 0.01, 1);
  const Period p = DominantPeriod(y, 2, 1000);
  EXPECT_EQ(p.period, 50);
  // Differencing doubles the noise variance: a 0.1 drop per 50 steps against 0.01 noise is
  // about as much signal as noise, r ~ 0.5.
  EXPECT_GT(p.strength, 0.4);
  EXPECT_NEAR(p.strength, DiffAcf(y, 50), 1e-9);
}

TEST(Stats, DominantPeriodSawtooth) {
  Vec y = Noise(2000, 0.05, 2);
  for (size_t i = 0; i < y.size(); ++i) y[i] += static_cast<double>(i % 50) / 50;
  const Period p = DominantPeriod(y, 5, 500);
  EXPECT_EQ(p.period, 50);
  EXPECT_NEAR(p.strength, DiffAcf(y, 50), 1e-9);
}

TEST(Stats, DominantPeriodSine) {
  Vec y(2000);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = std::sin(2 * std::numbers::pi * static_cast<double>(i) / 37) - 1e-3 * i;
  EXPECT_EQ(DominantPeriod(y, 2, 600).period, 37);
}

TEST(Stats, DominantPeriodTroughTellsASwingFromASmoothCurve) {
  // A swing turns around within its period: the autocorrelation of its differences is
  // negative near half the period.
  Vec sine(500);
  for (size_t i = 0; i < sine.size(); ++i) sine[i] = std::sin(2 * std::numbers::pi * static_cast<double>(i) / 8);
  const Period swing = DominantPeriod(sine, 2, 10);
  EXPECT_EQ(swing.period, 8);
  EXPECT_NEAR(swing.trough, DiffAcf(sine, 4), 1e-9);  // half the period: r = -1
  EXPECT_LT(swing.trough, -0.9);
  // A smooth descent whose slope wanders slowly (an AR(1) slope): every short lag is
  // positive (0.9^k), the largest at the shortest lag searched: no period to speak of.
  Vec slope = Noise(500, 0.02, 5), smooth(500, 0);
  for (size_t i = 1; i < slope.size(); ++i) {
    slope[i] += 0.9 * slope[i - 1];
    smooth[i] = smooth[i - 1] + slope[i] - 0.002;
  }
  const Period flat = DominantPeriod(smooth, 2, 10);
  EXPECT_GT(flat.trough, 0);
}

TEST(Stats, DominantPeriodPrefersTheFundamental) {
  // Epochs alternate between a drop of 1 and of 0.7, so the pattern strictly repeats every
  // 100 and the raw autocorrelation peaks there, but only just: 50 is the period to report.
  Vec y = Noise(2000, 0.01, 4);
  double level = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (i > 0 && i % 50 == 0) level -= (i / 50) % 2 ? 1.0 : 0.7;
    y[i] += level;
  }
  ASSERT_GT(DiffAcf(y, 100), DiffAcf(y, 50));
  ASSERT_LT(DiffAcf(y, 100) - DiffAcf(y, 50), 0.05);
  const Period p = DominantPeriod(y, 2, 600);
  EXPECT_EQ(p.period, 50);
  EXPECT_NEAR(p.strength, DiffAcf(y, 50), 1e-9);
}

TEST(Stats, DominantPeriodOutsideTheRangeFindsTheMultiple) {
  const Vec y = EpochLoss(3000, 50, 0.01, 1);
  EXPECT_EQ(DominantPeriod(y, 60, 300).period, 100);
}

TEST(Stats, DominantPeriodWhiteNoise) {
  const Period p = DominantPeriod(Noise(2000, 1, 8), 2, 600);
  EXPECT_EQ(p.period, 0);
  EXPECT_LT(p.strength, 0.2);
}

TEST(Stats, DominantPeriodEdges) {
  const Vec y = EpochLoss(3000, 50, 0.01, 1);
  EXPECT_EQ(DominantPeriod(y, 300, 100).period, 0);    // min > max
  EXPECT_EQ(DominantPeriod(y, 1001, 2000).period, 0);  // shorter than 3 * min_period
  EXPECT_EQ(DominantPeriod(Vec{}, 2, 10).period, 0);
  EXPECT_EQ(DominantPeriod(Vec{1}, 2, 10).period, 0);
  EXPECT_EQ(DominantPeriod(Vec(100, 3.0), 2, 30).period, 0);  // no variance
  Vec line(100);
  for (size_t i = 0; i < line.size(); ++i) line[i] = 0.5 * static_cast<double>(i);
  EXPECT_EQ(DominantPeriod(line, 2, 30).period, 0);  // constant differences
  // A lower bound below 2 and an unbounded upper one are clamped, not trusted.
  EXPECT_EQ(DominantPeriod(y, -5, INT64_MAX).period, 50);
}

TEST(Stats, DominantPeriodLongSeries) {
  const Vec y = EpochLoss(100000, 390, 0.002, 6);
  EXPECT_EQ(DominantPeriod(y, 2, 100000).period, 390);
}

// ---- Best so far ----

TEST(Stats, BestSoFarImprovesThenStalls) {
  Vec y;
  for (int i = 0; i < 50; ++i) y.push_back(100 - i);  // 100 .. 51, each > 0.1% better
  y.resize(80, 51.0);
  y.resize(100, 50.99);  // better, but by only 0.02%
  BestSoFar b = BestSoFarMin(y, 1e-3);
  EXPECT_EQ(b.best_index, 49);
  EXPECT_DOUBLE_EQ(b.best, 51);
  EXPECT_EQ(b.since, 50);
  b = BestSoFarMin(y, 0);  // any strict improvement counts
  EXPECT_EQ(b.best_index, 80);
  EXPECT_DOUBLE_EQ(b.best, 50.99);
  EXPECT_EQ(b.since, 19);
}

// A flat, noisy stretch: each value is within the threshold of the lowest so far, but the
// last ones are more than the threshold below the first. Anchoring progress to the last
// value that counted (as Keras' EarlyStopping does) would call index 4 progress.
TEST(Stats, BestSoFarNoiseDoesNotAddUpToProgress) {
  BestSoFar b = BestSoFarMin(Vec{1.0, 0.996, 0.997, 0.995, 0.994, 0.993}, 0.005);
  EXPECT_EQ(b.best_index, 1);
  EXPECT_DOUBLE_EQ(b.best, 0.996);
  EXPECT_EQ(b.since, 4);
  // A real step down later still counts.
  b = BestSoFarMin(Vec{1.0, 0.996, 0.997, 0.995, 0.95, 0.951}, 0.005);
  EXPECT_EQ(b.best_index, 4);
  EXPECT_EQ(b.since, 1);
}

TEST(Stats, BestSoFarNonPositiveValues) {
  // best = -1: the bar is -1 - 0.01 = -1.01.
  BestSoFar b = BestSoFarMin(Vec{-1, -1.0005, -1.02, -1.021}, 0.01);
  EXPECT_EQ(b.best_index, 2);
  EXPECT_DOUBLE_EQ(b.best, -1.02);
  EXPECT_EQ(b.since, 1);
  // best = 0: the bar is 0 itself.
  b = BestSoFarMin(Vec{0, 0, -1e-9}, 0.5);
  EXPECT_EQ(b.best_index, 2);
}

TEST(Stats, BestSoFarEdges) {
  BestSoFar b = BestSoFarMin(Vec{}, 0.01);
  EXPECT_EQ(b.best_index, -1);
  EXPECT_EQ(b.since, 0);
  b = BestSoFarMin(Vec{3}, 0.01);
  EXPECT_EQ(b.best_index, 0);
  EXPECT_DOUBLE_EQ(b.best, 3);
  EXPECT_EQ(b.since, 0);
  b = BestSoFarMin(Vec(10, 2.0), 0.01);  // equal is not better
  EXPECT_EQ(b.best_index, 0);
  EXPECT_EQ(b.since, 9);
}

// A flat stretch then a linear rise from index 300: the hinge lands there, with noise too;
// a rise from the start gives 0-ish; a falling curve has no rising hinge.
TEST(Stats, HingeOnsetFindsWhereGrowthBegan) {
  std::mt19937 rng(5);
  std::normal_distribution<double> noise(0, 0.5);
  Vec x, y, y_from_start, falling;
  for (int i = 0; i < 1000; ++i) {
    x.push_back(10.0 * i);
    y.push_back(5.0 + (i > 300 ? 0.02 * (i - 300) : 0.0) + noise(rng));
    y_from_start.push_back(5.0 + 0.02 * i + noise(rng));
    falling.push_back(5.0 - 0.02 * i + noise(rng));
  }
  EXPECT_NEAR(static_cast<double>(HingeOnset(x, y)), 300, 30);
  EXPECT_LE(HingeOnset(x, y_from_start), 30);
  EXPECT_EQ(HingeOnset(x, falling), -1);
  EXPECT_EQ(HingeOnset(Vec{1, 2, 3}, Vec{1, 2, 3}), -1);
}

// The noise around a curve, not the curve: sigma comes back from iid noise on a steep line and
// on a sawtooth (whose breaks are rare outliers to the MAD), and NaN below 3 points.
TEST(Stats, NoiseSdIgnoresTheCurvesOwnTrend) {
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0, 0.05);
  Vec line, saw;
  for (int i = 0; i < 5000; ++i) {
    line.push_back(100.0 - 0.3 * i + noise(rng));
    saw.push_back(0.02 * (i % 100) + noise(rng));
  }
  EXPECT_NEAR(NoiseSd(line), 0.05, 0.004);
  EXPECT_NEAR(NoiseSd(saw), 0.05, 0.005);
  EXPECT_TRUE(std::isnan(NoiseSd(Vec{1.0, 2.0})));
  EXPECT_EQ(NoiseSd(Vec{1.0, 2.0, 3.0, 4.0}), 0.0);  // a perfect line has no noise
}

}  // namespace
}  // namespace tw::diagnose::stats

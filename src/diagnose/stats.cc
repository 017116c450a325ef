#include "diagnose/stats.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <numbers>

namespace tw::diagnose::stats {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kMaxPairwisePoints = 2000;

// Halving each side first keeps the midpoint finite for values near DBL_MAX.
double Midpoint(double a, double b) { return 0.5 * a + 0.5 * b; }

// Reorders v; the caller owns a scratch copy.
double MedianInPlace(std::vector<double>& v) {
  if (v.empty()) return kNaN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  // nth_element leaves the lower half below v[mid], so its maximum is the other middle value.
  return Midpoint(*std::max_element(v.begin(), v.begin() + mid), v[mid]);
}

// Indices of up to `cap` evenly spaced points, first and last included, so an O(n^2) test
// sees the whole run rather than its start and gives the same answer on every call.
std::vector<size_t> EvenlySpaced(size_t n, size_t cap) {
  std::vector<size_t> idx(std::min(n, cap));
  if (idx.size() < 2) {
    for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
    return idx;
  }
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = k * (n - 1) / (idx.size() - 1);
  return idx;
}

int Sign(double v) { return (v > 0) - (v < 0); }

// Sum over tie groups of t(t-1)(2t+5): the part of Var(S) that ties take away.
double TieCorrection(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double total = 0;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j < v.size() && v[j] == v[i]) ++j;
    const double t = static_cast<double>(j - i);
    total += t * (t - 1) * (2 * t + 5);
    i = j;
  }
  return total;
}

// ---- Power law ----

// Points with t > 0, with u measured relative to the smallest t so that u = (t/t_min)^-alpha
// lies in (0, 1] and nothing overflows however small t_min is.
struct PowerLawData {
  std::vector<double> log_t;  // log(t / t_min), >= 0
  std::vector<double> y;      // y / y_scale
  double log_t_min = 0, y_scale = 1, sst = 0;
};

struct LinearFit {
  double e = 0, a = 0, sse = std::numeric_limits<double>::infinity();
};

// Least squares y = e + a*u for one alpha, in closed form. A negative a would make the
// "power law" grow with t, so it is clamped to 0 (a flat line at the mean).
LinearFit FitForAlpha(const PowerLawData& d, double alpha, std::vector<double>& u) {
  const size_t n = d.y.size();
  double u_mean = 0, y_mean = 0;
  for (size_t i = 0; i < n; ++i) {
    u[i] = std::exp(-alpha * d.log_t[i]);
    u_mean += u[i];
    y_mean += d.y[i];
  }
  u_mean /= static_cast<double>(n);
  y_mean /= static_cast<double>(n);
  double suu = 0, suy = 0;
  for (size_t i = 0; i < n; ++i) {
    suu += (u[i] - u_mean) * (u[i] - u_mean);
    suy += (u[i] - u_mean) * (d.y[i] - y_mean);
  }
  LinearFit f;
  f.a = (suu > 0 && suy > 0) ? suy / suu : 0;
  f.e = y_mean - f.a * u_mean;
  // Residuals summed directly: Syy - Suy^2/Suu cancels badly near a perfect fit, and the
  // alpha refinement lives exactly there.
  f.sse = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = d.y[i] - f.e - f.a * u[i];
    f.sse += r * r;
  }
  return f;
}

bool PreparePowerLaw(std::span<const double> t, std::span<const double> y, PowerLawData& d) {
  const size_t n = std::min(t.size(), y.size());
  double t_min = std::numeric_limits<double>::infinity(), y_scale = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(t[i] > 0)) continue;
    t_min = std::min(t_min, t[i]);
    y_scale = std::max(y_scale, std::abs(y[i]));
  }
  d.log_t_min = std::log(t_min);
  d.y_scale = y_scale > 0 ? y_scale : 1;
  double t_max = t_min;
  for (size_t i = 0; i < n; ++i) {
    if (!(t[i] > 0)) continue;
    d.log_t.push_back(std::log(t[i]) - d.log_t_min);
    d.y.push_back(y[i] / d.y_scale);
    t_max = std::max(t_max, t[i]);
  }
  // Three parameters; with one distinct t the curve is a single point and alpha means nothing.
  if (d.y.size() < 8 || !(t_max > t_min)) return false;
  double mean = 0;
  for (double v : d.y) mean += v;
  mean /= static_cast<double>(d.y.size());
  for (double v : d.y) d.sst += (v - mean) * (v - mean);
  return true;
}

// Grid first because SSE(alpha) can have several dips; golden section then polishes the best
// grid cell, which is small enough to hold a single minimum in practice.
double BestAlpha(const PowerLawData& d, std::vector<double>& u) {
  constexpr double kLo = 0.02, kHi = 3.0, kStep = 0.02;
  double best_alpha = kLo, best_sse = std::numeric_limits<double>::infinity();
  for (int k = 0; kLo + k * kStep <= kHi + 1e-9; ++k) {
    const double alpha = kLo + k * kStep;
    const double sse = FitForAlpha(d, alpha, u).sse;
    if (sse < best_sse) {
      best_sse = sse;
      best_alpha = alpha;
    }
  }
  constexpr double kInvPhi = 0.6180339887498949;
  double lo = std::max(kLo, best_alpha - kStep), hi = std::min(kHi, best_alpha + kStep);
  double x1 = hi - kInvPhi * (hi - lo), x2 = lo + kInvPhi * (hi - lo);
  double f1 = FitForAlpha(d, x1, u).sse, f2 = FitForAlpha(d, x2, u).sse;
  for (int iter = 0; iter < 60; ++iter) {  // 0.618^60 of 0.04: far below any useful alpha
    if (f1 <= f2) {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - kInvPhi * (hi - lo);
      f1 = FitForAlpha(d, x1, u).sse;
    } else {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + kInvPhi * (hi - lo);
      f2 = FitForAlpha(d, x2, u).sse;
    }
  }
  if (std::min(f1, f2) > best_sse) return best_alpha;
  return f1 <= f2 ? x1 : x2;
}

// ---- Autocorrelation ----

// In-place iterative radix-2 FFT; a.size() must be a power of two.
void Fft(std::vector<std::complex<double>>& a, bool inverse) {
  const size_t n = a.size();
  for (size_t i = 1, j = 0; i < n; ++i) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const double angle = 2 * std::numbers::pi / static_cast<double>(len) * (inverse ? 1 : -1);
    const std::complex<double> w_len(std::cos(angle), std::sin(angle));
    for (size_t i = 0; i < n; i += len) {
      std::complex<double> w(1);
      for (size_t k = 0; k < len / 2; ++k, w *= w_len) {
        const std::complex<double> even = a[i + k], odd = a[i + k + len / 2] * w;
        a[i + k] = even + odd;
        a[i + k + len / 2] = even - odd;
      }
    }
  }
}

// Sample autocorrelation r(0..max_lag) of the first differences, the usual biased estimator
// (lag sums over the full-length variance) so every r lies in [-1, 1]. Differencing removes
// the trend a training curve always has, leaving the per-epoch bumps. Via FFT because a
// 100,000-point series searched up to n/3 would be ~10^9 products done directly.
// Empty when the differences have no variance.
std::vector<double> DiffAutocorrelation(std::span<const double> y, size_t max_lag) {
  const size_t m = y.size() - 1;
  std::vector<double> d(m);
  double mean = 0;
  for (size_t i = 0; i < m; ++i) mean += (d[i] = y[i + 1] - y[i]);
  mean /= static_cast<double>(m);
  double scale = 0;
  for (double& v : d) scale = std::max(scale, std::abs(v -= mean));
  if (!(scale > 0) || !std::isfinite(scale)) return {};
  size_t size = 1;
  while (size < 2 * m) size <<= 1;  // zero padding so the circular sums do not wrap
  std::vector<std::complex<double>> a(size);
  for (size_t i = 0; i < m; ++i) a[i] = d[i] / scale;
  Fft(a, false);
  for (auto& c : a) c = std::norm(c);
  Fft(a, true);
  const double r0 = a[0].real();
  if (!(r0 > 0)) return {};
  std::vector<double> r(std::min(max_lag, m - 1) + 1);
  for (size_t k = 0; k < r.size(); ++k) r[k] = std::clamp(a[k].real() / r0, -1.0, 1.0);
  return r;
}

bool IsLocalMax(const std::vector<double>& r, size_t k) {
  return (k == 0 || r[k] >= r[k - 1]) && (k + 1 >= r.size() || r[k] >= r[k + 1]);
}

// Two or three periods in, the autocorrelation is often as high as at one period (sometimes
// higher, by noise). Among peaks within 0.05 of the best whose multiple lands on the best
// lag, the smallest is the fundamental.
size_t Fundamental(const std::vector<double>& r, size_t lo, size_t best) {
  constexpr double kNearTie = 0.05;
  for (size_t k = lo; k < best; ++k) {
    if (r[k] < r[best] - kNearTie || !IsLocalMax(r, k)) continue;
    const size_t multiple = (best + k / 2) / k;
    const size_t off = best > multiple * k ? best - multiple * k : multiple * k - best;
    if (multiple >= 2 && off <= multiple) return k;
  }
  return best;
}

}  // namespace

double Median(std::span<const double> x) {
  std::vector<double> v(x.begin(), x.end());
  return MedianInPlace(v);
}

double Mad(std::span<const double> x, double center) {
  std::vector<double> dev(x.size());
  for (size_t i = 0; i < x.size(); ++i) dev[i] = std::abs(x[i] - center);
  return MedianInPlace(dev);
}

double Quantile(std::span<const double> x, double q) {
  if (x.empty() || std::isnan(q)) return kNaN;
  std::vector<double> v(x.begin(), x.end());
  const double h = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const size_t lo = std::min(static_cast<size_t>(h), v.size() - 1);
  std::nth_element(v.begin(), v.begin() + lo, v.end());
  const double below = v[lo];
  if (lo + 1 == v.size()) return below;
  const double above = *std::min_element(v.begin() + lo + 1, v.end());
  const double frac = h - static_cast<double>(lo);
  const double gap = above - below;
  return std::isfinite(gap) ? below + frac * gap : (1 - frac) * below + frac * above;
}

double NoiseSd(std::span<const double> y) {
  if (y.size() < 3) return NAN;
  std::vector<double> d2;
  d2.reserve(y.size() - 2);
  for (size_t i = 2; i < y.size(); ++i) d2.push_back(y[i] - 2 * y[i - 1] + y[i - 2]);
  return 1.4826 * Mad(d2, Median(d2)) / std::sqrt(6.0);
}

int64_t HingeOnset(std::span<const double> x, std::span<const double> y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 8) return -1;
  double sy = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sy += y[i];
    syy += y[i] * y[i];
  }
  const double nn = static_cast<double>(n);
  const double total = syy - sy * sy / nn;  // SSE of the flat line
  // Suffix sums over i >= k of x, x^2, x*y, y and the count, updated as k falls.
  double tx = 0, txx = 0, txy = 0, ty = 0, tn = 0;
  int64_t best_k = -1;
  double best_sse = total;
  for (size_t k = n; k-- > 0;) {
    tx += x[k];
    txx += x[k] * x[k];
    txy += x[k] * y[k];
    ty += y[k];
    tn += 1;
    if (k + 3 > n) continue;  // at least 3 points on the rise
    // u_i = max(0, x_i - x_k): only the suffix contributes.
    const double su = tx - x[k] * tn;
    const double suu = txx - 2 * x[k] * tx + x[k] * x[k] * tn;
    const double suy = txy - x[k] * ty;
    const double vu = suu - su * su / nn;
    if (vu <= 0) continue;
    const double cuy = suy - su * sy / nn;
    if (cuy <= 0) continue;  // the hinge must rise
    const double sse = total - cuy * cuy / vu;
    if (sse < best_sse) {
      best_sse = sse;
      best_k = static_cast<int64_t>(k);
    }
  }
  return best_k;
}

std::vector<double> Ema(std::span<const double> x, double alpha) {
  std::vector<double> out(x.size());
  if (x.empty()) return out;
  // Out-of-range alpha is clamped rather than rejected: 0 holds x[0], 1 is the raw series.
  const double a = std::isnan(alpha) ? 1.0 : std::clamp(alpha, 0.0, 1.0);
  out[0] = x[0];
  // The weighted form, unlike prev + a*(x - prev), cannot overflow on finite inputs.
  for (size_t i = 1; i < x.size(); ++i) out[i] = (1 - a) * out[i - 1] + a * x[i];
  return out;
}

double TheilSenSlope(std::span<const double> x, std::span<const double> y) {
  const std::vector<size_t> idx = EvenlySpaced(std::min(x.size(), y.size()), kMaxPairwisePoints);
  std::vector<double> slopes;
  if (idx.size() > 1) slopes.reserve(idx.size() * (idx.size() - 1) / 2);
  for (size_t p = 0; p < idx.size(); ++p) {
    for (size_t q = p + 1; q < idx.size(); ++q) {
      const double dx = x[idx[q]] - x[idx[p]];
      if (dx == 0) continue;
      const double s = (y[idx[q]] - y[idx[p]]) / dx;
      if (!std::isnan(s)) slopes.push_back(s);  // inf/inf from overflowing differences
    }
  }
  return MedianInPlace(slopes);
}

Binned BinnedMedians(std::span<const double> x, std::span<const double> y, size_t cap) {
  const size_t n = std::min(x.size(), y.size());
  Binned out;
  if (n <= cap || cap == 0) {
    out.x.assign(x.begin(), x.begin() + n);
    out.y.assign(y.begin(), y.begin() + n);
    return out;
  }
  out.x.reserve(cap);
  out.y.reserve(cap);
  std::vector<double> bx, by;
  for (size_t b = 0; b < cap; ++b) {
    const size_t lo = b * n / cap, hi = (b + 1) * n / cap;
    bx.assign(x.begin() + lo, x.begin() + hi);
    by.assign(y.begin() + lo, y.begin() + hi);
    out.x.push_back(MedianInPlace(bx));
    out.y.push_back(MedianInPlace(by));
  }
  return out;
}

double MannKendallZ(std::span<const double> y) {
  const std::vector<size_t> idx = EvenlySpaced(y.size(), kMaxPairwisePoints);
  if (idx.size() < 3) return 0;
  std::vector<double> v(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) v[k] = y[idx[k]];
  int64_t s = 0;
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = i + 1; j < v.size(); ++j) s += Sign(v[j] - v[i]);
  const double n = static_cast<double>(v.size());
  const double var = (n * (n - 1) * (2 * n + 5) - TieCorrection(v)) / 18;
  if (!(var > 0) || s == 0) return 0;
  return (static_cast<double>(s) - Sign(static_cast<double>(s))) / std::sqrt(var);
}

double RankVonNeumannZ(std::span<const double> y) {
  const size_t n = y.size();
  if (n < 10) return 0;
  // Ranks, ties given their average rank.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return y[a] < y[b]; });
  std::vector<double> rank(n);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && y[order[j + 1]] == y[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = 0.5 * static_cast<double>(i + j) + 1;
    i = j + 1;
  }
  const double mean = 0.5 * (static_cast<double>(n) + 1);
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    den += (rank[i] - mean) * (rank[i] - mean);
    if (i + 1 < n) num += (rank[i] - rank[i + 1]) * (rank[i] - rank[i + 1]);
  }
  if (!(den > 0)) return 0;
  // Bartels (1982): the ratio's variance under independence.
  const double m = static_cast<double>(n);
  const double var = 4 * (m - 2) * (5 * m * m - 2 * m - 9) / (5 * m * (m + 1) * (m - 1) * (m - 1));
  return (2 - num / den) / std::sqrt(var);
}

TrailingZ TrailingRobustZ(std::span<const double> x, int window) {
  TrailingZ out{std::vector<double>(x.size(), kNaN), std::vector<double>(x.size(), kNaN)};
  if (window < 1 || static_cast<size_t>(window) >= x.size()) return out;
  const size_t w = static_cast<size_t>(window);
  std::vector<double> scratch(w);
  // The noise bound is refreshed every tenth of a window: it moves slowly, and recomputing it
  // at every point would double the cost of a long series.
  const size_t refresh = std::max<size_t>(1, w / 10);
  const size_t recent = std::max<size_t>(5, w / 10);  // the level's recent part (see below)
  double noise_mad = 0;
  for (size_t i = w; i < x.size(); ++i) {
    scratch.assign(x.begin() + (i - w), x.begin() + i);
    const double m = MedianInPlace(scratch);
    for (double& v : scratch) v = std::abs(v - m);
    double d = MedianInPlace(scratch);
    // A trend inflates the spread around the median (a loss falling 2.2 -> 0.8 spreads a
    // 100-point window by the descent): the point-to-point noise, from second differences
    // that cancel it, bounds the scale. Both are MADs of the noise for a flat window.
    if (w >= 5 && (i - w) % refresh == 0) noise_mad = NoiseSd(x.subspan(i - w, w)) / 1.4826;
    if (noise_mad > 0) d = std::min(d, noise_mad);
    if (d == 0) d = std::max(1e-12, 1e-6 * std::abs(m));
    // The level: the window's median, or the median of its last tenth where that is higher (a
    // rising curve leaves the window's median behind by half the window's rise; read against
    // it, every point of an overfitting validation loss would stand out).
    double level = m;
    if (recent < w) {
      scratch.assign(x.begin() + (i - recent), x.begin() + i);
      level = std::max(m, MedianInPlace(scratch));
    }
    out.z[i] = 0.6745 * (x[i] - level) / d;
    out.level[i] = level;
  }
  return out;
}

std::vector<LocalSpike> LocalSpikes(std::span<const double> y, size_t k, double z, double min_rise,
                                    double recover_tol, double frequent_min_rise) {
  std::vector<LocalSpike> out;
  if (k < 1 || y.size() < 2 * k + 3) return out;
  const double sd = NoiseSd(y);
  if (!(sd > 0) || !std::isfinite(sd)) return out;
  // Each point's sides, once: the medians of the k points before and after it (judged points
  // only), and the lowest point of each side, of as many points as it has (-inf for none).
  constexpr double kNone = -std::numeric_limits<double>::infinity();
  std::vector<double> before(y.size(), NAN), after(y.size(), NAN);
  std::vector<double> low_before(y.size(), kNone), low_after(y.size(), kNone);
  for (size_t i = 0; i < y.size(); ++i) {
    if (i >= k && i + k < y.size()) {
      before[i] = Median(y.subspan(i - k, k));
      after[i] = Median(y.subspan(i + 1, k));
    }
    const size_t lo = i >= k ? i - k : 0, hi = std::min(y.size(), i + k + 1);
    if (lo < i) low_before[i] = *std::min_element(y.begin() + lo, y.begin() + i);
    if (i + 1 < hi) low_after[i] = *std::min_element(y.begin() + (i + 1), y.begin() + hi);
  }
  // Rises of frequent_min_rise or more are measured from the lower envelope (the higher of
  // the sides' lowest points): a jump that takes a point or two to come back (BatchNorm's
  // running statistics, Adam's moments) lifts the median of its own far side and of the next
  // jump's near side, and jumps that recur every third point would hide in each other's medians.
  auto envelope = [&](size_t i) { return std::max(low_before[i], low_after[i]); };
  // Those are judged against the noise of the points not raised at all (not min_rise above
  // their envelope: the first and last k points too, on the sides they have, since a jump
  // there would spoil the estimate as much): when they recur (a bad shard every fourth batch)
  // each spoils three second differences, and the MAD of those reads the spikes as noise.
  // Only large rises are judged so: heavy-tailed minibatch noise would lose its own tail the
  // same way. A third of the points at least must be quiet, or the curve is its noise; and
  // the quiet points' noise must be under half the whole curve's, or the jumps are not what
  // makes its noise (a loss near zero bouncing 0.002 <-> 0.05 has lows and highs alike, and
  // its highs stand 10x above the lowest of their sides without being jumps).
  double quiet_sd = sd;
  bool frequent_judged = std::isfinite(frequent_min_rise);
  if (frequent_judged) {
    std::vector<double> quiet;
    quiet.reserve(y.size());
    for (size_t i = 0; i < y.size(); ++i)
      if (y[i] - envelope(i) < min_rise) quiet.push_back(y[i]);
    const double q = quiet.size() >= 5 && 3 * quiet.size() >= y.size() ? NoiseSd(quiet) : NAN;
    frequent_judged = q > 0 && q < 0.5 * sd;
    if (frequent_judged) quiet_sd = q;
  }
  for (size_t i = k; i + k < y.size(); ++i) {
    const bool frequent = frequent_judged && y[i] - envelope(i) >= frequent_min_rise;
    const double level = frequent ? envelope(i) : std::max(before[i], after[i]);
    const double rise = y[i] - level, noise = frequent ? quiet_sd : sd;
    const double zi = rise / noise;
    if (!(zi > z) || rise < min_rise) continue;
    const double back = frequent ? low_after[i] - low_before[i] : after[i] - before[i];
    const bool recovered = back <= std::max(recover_tol, 3 * noise / std::sqrt(static_cast<double>(k)));
    if (!out.empty() && out.back().index + 1 == i) {  // the same spike, one point on
      if (zi > out.back().z) out.back() = {i, level, zi, recovered && out.back().recovered};
      continue;
    }
    out.push_back({i, level, zi, recovered});
  }
  return out;
}

int64_t CusumUp(std::span<const double> x, double mean, double sd, double k, double h,
                int64_t* onset) {
  if (onset) *onset = -1;
  // Without a positive scale there is no unit to count deviations in.
  if (!(sd > 0) || !std::isfinite(sd)) return -1;
  double s = 0;
  int64_t run_start = -1;
  for (size_t i = 0; i < x.size(); ++i) {
    s = std::max(0.0, s + (x[i] - mean) / sd - k);
    if (s == 0) {
      run_start = -1;
      continue;
    }
    if (run_start < 0) run_start = static_cast<int64_t>(i);
    if (s > h) {
      if (onset) *onset = run_start;
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

double PowerLaw::Predict(double t) const {
  if (!ok || !(t > 0)) return kNaN;
  return e + a * std::pow(t, -alpha);
}

PowerLaw FitPowerLaw(std::span<const double> t, std::span<const double> y) {
  PowerLaw p;
  PowerLawData d;
  if (!PreparePowerLaw(t, y, d)) return p;
  std::vector<double> u(d.y.size());
  const double alpha = BestAlpha(d, u);
  const LinearFit f = FitForAlpha(d, alpha, u);
  // Undo the scalings: y was divided by y_scale, and u by t_min^-alpha.
  p.alpha = alpha;
  p.e = f.e * d.y_scale;
  p.a = f.a * d.y_scale * std::exp(alpha * d.log_t_min);
  p.rmse = std::sqrt(f.sse / static_cast<double>(d.y.size())) * d.y_scale;
  p.r2 = d.sst > 0 ? 1 - f.sse / d.sst : 0;
  p.ok = std::isfinite(p.e) && std::isfinite(p.a) && std::isfinite(p.rmse);
  return p;
}

Period DominantPeriod(std::span<const double> y, int64_t min_period, int64_t max_period) {
  // A period of 1 is no period at all, and lag 0 is trivially 1.
  const int64_t lo = std::max<int64_t>(min_period, 2);
  const int64_t n = static_cast<int64_t>(y.size());
  if (lo > n / 3) return {};
  const int64_t hi = std::min(max_period, n / 3);
  if (hi < lo) return {};
  // One lag past hi so the peak test can see both neighbours of hi.
  const std::vector<double> r = DiffAutocorrelation(y, static_cast<size_t>(hi) + 1);
  if (r.size() <= static_cast<size_t>(lo)) return {};
  const size_t top = std::min(static_cast<size_t>(hi), r.size() - 1);
  size_t best = static_cast<size_t>(lo);
  for (size_t k = best; k <= top; ++k)
    if (r[k] > r[best]) best = k;
  const size_t chosen = Fundamental(r, static_cast<size_t>(lo), best);
  Period p;
  p.strength = r[chosen];
  if (p.strength >= 0.2) {
    p.period = static_cast<int64_t>(chosen);
    p.trough = *std::min_element(r.begin() + 1, r.begin() + static_cast<std::ptrdiff_t>(chosen));
  }
  return p;
}

BestSoFar BestSoFarMin(std::span<const double> y, double min_delta_rel) {
  BestSoFar b;
  if (y.empty()) return b;
  // A negative threshold would count getting worse as improving.
  const double rel = std::isnan(min_delta_rel) ? 0.0 : std::max(0.0, min_delta_rel);
  // best * (1 - rel) for best > 0 and best - |best| * rel for best <= 0 are the same line.
  auto bar = [rel](double best) { return best - std::abs(best) * rel; };
  // suffix_min[i] = min(y[i..]). Progress is judged against the lowest value so far, not
  // against the value that last counted as progress: anchored to that one (Keras'
  // EarlyStopping), noise on a flat curve eventually adds up to one "improvement" and
  // resets the count however long the stall.
  std::vector<double> suffix_min(y.size() + 1, INFINITY);
  for (size_t i = y.size(); i-- > 0;) suffix_min[i] = std::min(y[i], suffix_min[i + 1]);
  b.best_index = 0;
  b.best = y[0];
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] < b.best) {
      b.best_index = static_cast<int64_t>(i);
      b.best = y[i];
    }
    // Stalled since i when nothing later beats the best so far by the threshold.
    if (!(suffix_min[i + 1] < bar(b.best))) break;
  }
  b.since = static_cast<int64_t>(y.size()) - 1 - b.best_index;
  return b;
}

int64_t SwingOnset(std::span<const double> y, size_t period) {
  const size_t n = y.size(), half = period / 2;
  if (period < 3 || n < 2 * period + 10) return -1;
  std::vector<double> d, window;
  for (size_t i = half; i + half < n; ++i) {
    window.assign(y.begin() + (i - half), y.begin() + (i + half + 1));
    const double base = MedianInPlace(window);
    d.push_back((y[i] - base) * (y[i] - base));
  }
  // Two constant levels by least squares: maximise the between-groups sum of squares.
  std::vector<double> prefix(d.size() + 1, 0);
  for (size_t k = 0; k < d.size(); ++k) prefix[k + 1] = prefix[k] + d[k];
  const double total = prefix.back(), m = static_cast<double>(d.size());
  int64_t best_k = -1;
  double best_gain = 0;
  for (size_t k = 5; k + 5 <= d.size(); ++k) {
    const double a = prefix[k] / static_cast<double>(k);
    const double b = (total - prefix[k]) / (m - static_cast<double>(k));
    if (b <= a) continue;
    const double gain = static_cast<double>(k) * (m - static_cast<double>(k)) * (b - a) * (b - a);
    if (gain > best_gain) best_gain = gain, best_k = static_cast<int64_t>(k);
  }
  return best_k < 0 ? -1 : best_k + static_cast<int64_t>(half);
}

namespace {

// Welch's z for mean(a) - mean(b); 0 when either group has fewer than 3 values.
double WelchZ(const std::vector<double>& a, const std::vector<double>& b, double* diff) {
  auto moments = [](const std::vector<double>& v) {
    double m = 0, ss = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    for (double x : v) ss += (x - m) * (x - m);
    return std::pair{m, ss / static_cast<double>(v.size() - 1)};
  };
  *diff = 0;
  if (a.size() < 3 || b.size() < 3) return 0;
  auto [ma, va] = moments(a);
  auto [mb, vb] = moments(b);
  *diff = ma - mb;
  const double se = std::sqrt(va / static_cast<double>(a.size()) + vb / static_cast<double>(b.size()));
  return se > 0 ? *diff / se : 0;
}

}  // namespace

EpochFold FoldedEpochContrast(std::span<const double> x, std::span<const double> y,
                              std::span<const double> boundaries) {
  EpochFold out;
  const size_t n = std::min(x.size(), y.size());
  std::vector<double> b(boundaries.begin(), boundaries.end());
  std::sort(b.begin(), b.end());
  if (b.size() < 2 || n < 10) return out;
  // The median epoch length, in steps and in points.
  std::vector<double> len_steps, len_points;
  for (size_t k = 1; k < b.size(); ++k) {
    len_steps.push_back(b[k] - b[k - 1]);
    const auto lo = std::lower_bound(x.begin(), x.begin() + n, b[k - 1]);
    const auto hi = std::lower_bound(x.begin(), x.begin() + n, b[k]);
    len_points.push_back(static_cast<double>(hi - lo));
  }
  const double epoch_steps = Median(len_steps);
  const size_t w = static_cast<size_t>(Median(len_points));
  out.epoch_points = w;
  if (w < 5 || !(epoch_steps > 0) || n < 3 * w) return out;
  // Residuals from a centered moving average one epoch wide (prefix sums: O(n)).
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + y[i];
  const size_t half = w / 2;
  std::vector<double> early, late, c_early, c_late;
  for (size_t i = half; i + (w - half) <= n; ++i) {
    const double trend = (prefix[i - half + w] - prefix[i - half]) / static_cast<double>(w);
    const double r = y[i] - trend;
    // Phase within the epoch holding x[i]; before the first boundary and after the last, the
    // median epoch length stands in for the missing neighbour.
    const auto up = std::upper_bound(b.begin(), b.end(), x[i]);
    const double start = up == b.begin() ? b.front() - epoch_steps : *(up - 1);
    const double end = up == b.end() ? b.back() + epoch_steps : *up;
    if (!(end > start)) continue;
    const double phase = (x[i] - start) / (end - start);
    if (phase < 0.2) early.push_back(r);
    else if (phase >= 0.8) late.push_back(r);
    if (phase >= 0.5 && phase < 0.7) c_early.push_back(r);
    else if (phase >= 0.3 && phase < 0.5) c_late.push_back(r);
  }
  if (early.size() < 10 || late.size() < 10) return out;
  double control_diff = 0;
  out.z = WelchZ(early, late, &out.effect);
  out.control_z = WelchZ(c_early, c_late, &control_diff);
  out.ok = true;
  return out;
}

HistShares HistogramShares(std::span<const double> triples, double lo, double hi, double tol) {
  HistShares out;
  if (triples.size() % 3 != 0 || !std::isfinite(lo) || !std::isfinite(hi) || lo > hi) return out;
  const double band = tol * std::max(std::abs(lo), std::abs(hi));
  double zero = 0, neg = 0, pos = 0;
  for (size_t i = 0; i < triples.size(); i += 3) {
    const double left = triples[i], right = triples[i + 1], n = triples[i + 2];
    if (!std::isfinite(n) || n < 0) return out;
    if (n == 0) continue;
    // A writer's outermost limit may be huge (TensorFlow ends with DBL_MAX): the histogram's
    // own min and max bound where its values are.
    const double mid = std::clamp(std::isfinite(left + right) ? (left + right) / 2 : std::isfinite(left) ? left : right, lo, hi);
    if (std::abs(mid) <= band) zero += n;
    else if (mid < 0) neg += n;
    else pos += n;
  }
  out.count = zero + neg + pos;
  if (out.count <= 0) return out;
  out.ok = true;
  out.zero = zero / out.count;
  out.negative = neg / out.count;
  out.positive = pos / out.count;
  return out;
}

}  // namespace tw::diagnose::stats

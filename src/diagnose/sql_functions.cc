#include "diagnose/sql_functions.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/writer_process.h"
#include "diagnose/roles.h"
#include "diagnose/stats.h"

namespace tw::diagnose {

namespace {

// The rows an aggregate has seen: (step, value) pairs, the constant arguments after them (read
// from the first row), and whether any value was NULL or non-finite (kept for sparklines).
struct Acc {
  std::vector<double> step, value;
  std::vector<double> args;
  std::string text_arg;
  bool args_read = false;
  int64_t non_finite = 0;
  std::vector<double> bad_steps;  // steps of NULL/non-finite values
};

struct Series {
  std::vector<double> step, value;
  bool log = false;  // value is log(original): every original value was > 0
};

// Sorts by step (stable: equal steps keep their order) and optionally takes logs.
Series Sorted(const Acc& a, bool log_if_positive) {
  std::vector<size_t> idx(a.step.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return a.step[x] < a.step[y]; });
  Series s;
  s.step.reserve(idx.size());
  s.value.reserve(idx.size());
  for (size_t i : idx) {
    s.step.push_back(a.step[i]);
    s.value.push_back(a.value[i]);
  }
  if (log_if_positive && !s.value.empty() &&
      std::all_of(s.value.begin(), s.value.end(), [](double v) { return v > 0; })) {
    for (double& v : s.value) v = std::log(v);
    s.log = true;
  }
  return s;
}

double Back(const Series& s, double y) { return s.log ? std::exp(y) : y; }

using Finalizer = void (*)(Acc& acc, sqlite3_context* ctx);

// argv layout: with_step ? (step, value, args...) : (value, args...).
template <bool kWithStep>
void StepFn(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  auto** slot = static_cast<Acc**>(sqlite3_aggregate_context(ctx, sizeof(Acc*)));
  if (!slot) return sqlite3_result_error_nomem(ctx);
  if (!*slot) *slot = new Acc();
  Acc& a = **slot;
  const int first_arg = kWithStep ? 2 : 1;
  if (!a.args_read) {
    a.args_read = true;
    for (int i = first_arg; i < argc; ++i) {
      if (sqlite3_value_type(argv[i]) == SQLITE_TEXT) {
        a.text_arg = reinterpret_cast<const char*>(sqlite3_value_text(argv[i]));
        a.args.push_back(0);
      } else {
        a.args.push_back(sqlite3_value_double(argv[i]));
      }
    }
  }
  const double step = kWithStep ? sqlite3_value_double(argv[0])
                                : static_cast<double>(a.step.size() + a.non_finite);
  sqlite3_value* v = argv[kWithStep ? 1 : 0];
  const bool is_null = sqlite3_value_type(v) == SQLITE_NULL;
  const double x = is_null ? NAN : sqlite3_value_double(v);
  if (!std::isfinite(x)) {
    a.non_finite++;
    a.bad_steps.push_back(step);
    return;
  }
  a.step.push_back(step);
  a.value.push_back(x);
}

template <Finalizer F>
void FinalFn(sqlite3_context* ctx) {
  auto** slot = static_cast<Acc**>(sqlite3_aggregate_context(ctx, 0));
  Acc empty;
  Acc* a = slot && *slot ? *slot : &empty;
  F(*a, ctx);
  if (a != &empty) delete a;
}

double Arg(const Acc& a, size_t i, double fallback) {
  return i < a.args.size() ? a.args[i] : fallback;
}

void ResultNumber(sqlite3_context* ctx, double v) {
  if (std::isnan(v)) sqlite3_result_null(ctx);
  else sqlite3_result_double(ctx, v);
}

void ResultJson(sqlite3_context* ctx, const Json& j) {
  const std::string& s = j.str();
  sqlite3_result_text(ctx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

// --- plain aggregates -------------------------------------------------------------------

// tw_hinge_onset(step, value): the step where a flat stretch turns into a rise (stats::HingeOnset).
void HingeFinal(Acc& a, sqlite3_context* ctx) {
  Series s = Sorted(a, false);
  const int64_t k = stats::HingeOnset(s.step, s.value);
  if (k < 0) return sqlite3_result_null(ctx);
  sqlite3_result_double(ctx, s.step[static_cast<size_t>(k)]);
}

void NoiseFinal(Acc& a, sqlite3_context* ctx) {
  Series s = Sorted(a, false);
  ResultNumber(ctx, s.value.size() >= 5 ? stats::NoiseSd(s.value) : NAN);
}

void MedianFinal(Acc& a, sqlite3_context* ctx) { ResultNumber(ctx, stats::Median(a.value)); }
void MadFinal(Acc& a, sqlite3_context* ctx) {
  ResultNumber(ctx, stats::Mad(a.value, stats::Median(a.value)));
}
void QuantileFinal(Acc& a, sqlite3_context* ctx) {
  ResultNumber(ctx, stats::Quantile(a.value, Arg(a, 0, 0.5)));
}

// --- curve analyses (JSON) ----------------------------------------------------------------

// Medians of the first and last `frac` of a series (at least min_points points): robust end
// levels, one definition for tw_trend, tw_ends and the rules that compare a start with an end.
std::pair<double, double> EndLevels(const std::vector<double>& y, size_t min_points = 3, double frac = 0.1) {
  const auto share = static_cast<size_t>(frac * static_cast<double>(y.size()));
  const size_t k = std::min(y.size(), std::max(min_points, share));
  return {stats::Median(std::span(y).first(k)), stats::Median(std::span(y).last(k))};
}

// tw_ends(step, value [, min_points = 3 [, frac = 0.1]]): {n, start, end}, the medians of the
// first and last tenth (or frac) of the points by step, at least min_points each.
void EndsFinal(Acc& a, sqlite3_context* ctx) {
  Series s = Sorted(a, false);
  Json j;
  j.Num("n", static_cast<double>(s.value.size()));
  if (!s.value.empty()) {
    const auto min_points = static_cast<size_t>(std::clamp(Arg(a, 0, 3), 1.0, 1e9));
    const double frac = std::clamp(Arg(a, 1, 0.1), 0.0, 0.5);
    auto [start, end] = EndLevels(s.value, min_points, frac);
    j.Num("start", start).Num("end", end);
  }
  ResultJson(ctx, j);
}

void TrendFinal(Acc& a, sqlite3_context* ctx) {
  Series s = Sorted(a, false);
  Json j;
  j.Num("n", static_cast<double>(s.value.size()));
  if (s.value.size() >= 3) {
    auto [start, end] = EndLevels(s.value);
    // A long series is fitted through bin medians: every point counts, and the residuals'
    // spread is then the bins' own, so the standard error below stays honest.
    const stats::Binned b = stats::BinnedMedians(s.step, s.value);
    const double slope = stats::TheilSenSlope(b.x, b.y);
    // The noise around the fitted line (robust SD of the residuals), and from it the standard
    // error of the line's total change over the span: for evenly spread points a least-squares
    // slope's SE times the span is sd * sqrt(12 / n); Theil–Sen is close to that.
    std::vector<double> resid(b.y.size());
    const double mid_x = stats::Median(b.x), mid_y = stats::Median(b.y);
    for (size_t i = 0; i < resid.size(); ++i) resid[i] = b.y[i] - (mid_y + slope * (b.x[i] - mid_x));
    const double sd = 1.4826 * stats::Mad(resid, stats::Median(resid));
    const double span = s.step.back() - s.step.front();
    // Point-to-point noise, from second differences (they cancel a local linear trend, so a
    // curve that is flat and then rises does not inflate it): for iid noise SD(d2) = sqrt(6) sd.
    const double noise = stats::NoiseSd(s.value);
    j.Num("slope", slope)
        .Num("noise_sd", noise)
        .Num("change", slope * span)
        .Num("change_se", sd * std::sqrt(12.0 / static_cast<double>(b.y.size())))
        .Num("resid_sd", sd)
        .Num("mk_z", stats::MannKendallZ(s.value))
        .Num("first_step", s.step.front())
        .Num("last_step", s.step.back())
        .Num("start", start)
        .Num("end", end)
        .Num("min", *std::min_element(s.value.begin(), s.value.end()))
        .Num("max", *std::max_element(s.value.begin(), s.value.end()))
        .Num("rel_change", start != 0 ? (end - start) / std::fabs(start) : NAN);
  }
  ResultJson(ctx, j);
}

void SpikesFinal(Acc& a, sqlite3_context* ctx) {
  const int window = std::max(5, static_cast<int>(Arg(a, 0, 100)));
  const double zthr = Arg(a, 1, 8);
  const size_t recover = static_cast<size_t>(std::max(1.0, Arg(a, 2, 50)));
  const double recover_ratio = std::max(1.0, Arg(a, 3, 1.25));
  Series s = Sorted(a, true);
  const size_t n = s.value.size();
  stats::TrailingZ tz = stats::TrailingRobustZ(s.value, window);
  Json spikes = Json::Array();
  int64_t count = 0, unrecovered = 0, pending = 0;
  double max_z = 0, max_ratio = 0;
  double first_step = NAN, last_step = NAN;
  for (size_t i = window; i < n; ++i) {
    if (!(tz.z[i] > zthr)) continue;
    // One event: the run of points above the threshold; its peak describes it.
    size_t end = i, peak = i;
    while (end + 1 < n && tz.z[end + 1] > zthr) {
      ++end;
      if (tz.z[end] > tz.z[peak]) peak = end;
    }
    const double level = tz.level[i];
    // The pre-spike window's scale, recovered from z = 0.6745 (x - m) / d.
    const double d = 0.6745 * (s.value[i] - level) / tz.z[i];
    const double ratio = Back(s, s.value[peak]) / Back(s, level);
    std::string recovered = "null";
    if (end + recover < n) {
      std::vector<double> after(s.value.begin() + end + 1, s.value.begin() + end + 1 + recover);
      // Recovered: the level after is back within recover_ratio of the level before, or
      // within 3 SDs of a median of `recover` noisy points. Comparing against one point's
      // noise instead would let a noisy curve settle 1.7x higher and call it recovered.
      const double noise = 3 * 1.4826 * d * 1.2533 / std::sqrt(static_cast<double>(recover));
      const double ratio_tol = s.log ? std::log(recover_ratio) : std::abs(level) * (recover_ratio - 1);
      const bool ok = stats::Median(after) <= level + std::max(noise, ratio_tol);
      recovered = ok ? "true" : "false";
      if (!ok) unrecovered++;
    } else {
      pending++;
    }
    count++;
    max_z = std::max(max_z, tz.z[peak]);
    max_ratio = std::max(max_ratio, ratio);
    if (std::isnan(first_step)) first_step = s.step[peak];
    last_step = s.step[peak];
    // Its shape: how many points it spans, and how high its middle point stands, as a share of
    // the peak's rise (a spike decays from its peak; a block of raised points is flat-topped).
    std::vector<double> rise(s.value.begin() + i, s.value.begin() + end + 1);
    const double top_share = (stats::Median(rise) - level) / (s.value[peak] - level);
    Json e;
    e.Num("step", s.step[peak]).Num("value", Back(s, s.value[peak])).Num("level", Back(s, level))
        .Num("z", tz.z[peak]).Num("ratio", ratio).Raw("recovered", recovered)
        .Num("width", static_cast<double>(end - i + 1)).Num("top_share", top_share);
    spikes.Push(e);
    i = end;
  }
  Json j;
  j.Num("n", static_cast<double>(n)).Bool("log", s.log).Num("window", window)
      .Num("count", static_cast<double>(count)).Num("unrecovered", static_cast<double>(unrecovered))
      .Num("pending", static_cast<double>(pending)).Num("max_z", max_z).Num("max_ratio", max_ratio)
      .Num("first_step", first_step).Num("last_step", last_step)
      .Num("series_last_step", n ? s.step.back() : NAN)
      .Nested("spikes", spikes.LastItems(500));
  ResultJson(ctx, j);
}

// tw_local_spikes(step, value, k, z [, min_ratio = 1.5, recover_ratio = 1.25 [, frequent_ratio]]):
// spikes of a short curve against both its sides (stats::LocalSpikes), on the log scale when
// every value is positive; rises of frequent_ratio or more over the lower envelope (none by
// default) are judged from it against the noise of the points not raised (stats.h). The same JSON as tw_spikes. A curve that is not positive (an RL or energy loss) has
// no ratio: its `ratio` is then 1 + the rise over the curve's typical size (median |value|),
// so the same thresholds read "a rise of half its size" for it.
void LocalSpikesFinal(Acc& a, sqlite3_context* ctx) {
  const size_t k = static_cast<size_t>(std::max(1.0, Arg(a, 0, 2)));
  const double zthr = Arg(a, 1, 7), min_ratio = std::max(1.0, Arg(a, 2, 1.5));
  const double recover_ratio = std::max(1.0, Arg(a, 3, 1.25));
  // Rises of this ratio or more are measured against the noise of the other points (stats.h).
  const double frequent_ratio = std::max(min_ratio, Arg(a, 4, INFINITY));
  Series s = Sorted(a, true);
  const size_t n = s.value.size();
  std::vector<double> size(s.value.size());
  for (size_t i = 0; i < n; ++i) size[i] = std::abs(s.value[i]);
  const double scale = s.log ? 1 : stats::Median(size);
  auto rise = [&](double r) { return s.log ? std::log(r) : (r - 1) * scale; };
  Json spikes = Json::Array();
  int64_t unrecovered = 0;
  double max_z = 0, max_ratio = 0, first_step = NAN, last_step = NAN;
  const auto found = scale > 0 ? stats::LocalSpikes(s.value, k, zthr, rise(min_ratio), rise(recover_ratio),
                                                    rise(frequent_ratio))
                               : std::vector<stats::LocalSpike>{};
  for (const auto& p : found) {
    const double v = s.value[p.index];
    const double ratio = s.log ? std::exp(v - p.level) : 1 + (v - p.level) / scale;
    unrecovered += !p.recovered;
    max_z = std::max(max_z, p.z);
    max_ratio = std::max(max_ratio, ratio);
    if (std::isnan(first_step)) first_step = s.step[p.index];
    last_step = s.step[p.index];
    Json e;
    e.Num("step", s.step[p.index]).Num("value", Back(s, v)).Num("level", Back(s, p.level))
        .Num("z", p.z).Num("ratio", ratio).Raw("recovered", p.recovered ? "true" : "false");
    spikes.Push(e);
  }
  Json j;
  j.Num("n", static_cast<double>(n)).Bool("log", s.log).Num("window", static_cast<double>(2 * k))
      .Num("count", static_cast<double>(found.size())).Num("unrecovered", static_cast<double>(unrecovered))
      .Num("pending", 0).Num("max_z", max_z).Num("max_ratio", max_ratio)
      .Num("first_step", first_step).Num("last_step", last_step)
      .Num("series_last_step", n ? s.step.back() : NAN)
      .Nested("spikes", spikes.LastItems(500));
  ResultJson(ctx, j);
}

// Trailing median of y over `w` points, for i >= w-1 (earlier entries: the median so far).
std::vector<double> RollingMedian(const std::vector<double>& y, size_t w) {
  std::vector<double> out(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const size_t lo = i + 1 >= w ? i + 1 - w : 0;
    out[i] = stats::Median(std::span(y).subspan(lo, i + 1 - lo));
  }
  return out;
}

void DivergenceFinal(Acc& a, sqlite3_context* ctx) {
  const size_t w = static_cast<size_t>(std::max(3.0, Arg(a, 0, 50)));
  Series s = Sorted(a, true);
  const size_t n = s.value.size();
  Json j;
  j.Num("n", static_cast<double>(n)).Bool("log", s.log);
  if (n >= 2 * w) {
    std::vector<double> sm = RollingMedian(s.value, w);
    // The best is looked for from the third point on (the median of the first three): a loss
    // that leaves its start within the first window (an LR 1000x too high diverges in three
    // steps) has its best there, before the first full window.
    const size_t f = std::min<size_t>(w, 3) - 1;
    size_t ib = f;
    for (size_t i = f; i < n; ++i)
      if (sm[i] < sm[ib]) ib = i;
    const double best = sm[ib], current = sm[n - 1], initial = sm[w - 1];
    double peak_after = best;
    for (size_t i = ib; i < n; ++i) peak_after = std::max(peak_after, sm[i]);
    auto ratio = [&](double x, double y) { return s.log ? std::exp(x - y) : (y != 0 ? x / y : NAN); };
    // Has the curve been this high before, since it first came down past halfway between best
    // and now, and fallen back by itself? Then the rise is a swing, not a divergence (yet).
    const double mid = 0.5 * (best + current);
    std::optional<size_t> came_back;
    bool below = false;
    for (size_t i = f; i < ib; ++i) {
      below = below || sm[i] < mid;
      if (below && sm[i] >= current) came_back = i;
    }
    if (came_back) j.Num("was_as_high_step", s.step[*came_back]);
    const std::vector<double> tail(s.value.begin() + ib, s.value.end());
    const double span = s.step.back() - s.step.front();
    // How much of the rise one step makes: the largest jump between the medians of m points
    // either side, anywhere since the best's window began, over the whole rise. Near 1: the loss
    // stepped up once (a spike that stayed); near 0: it climbed.
    if (current > best) {
      const size_t m = std::max<size_t>(5, w / 5), from = ib + 1 >= w ? ib + 1 - w : 0;
      double jump = 0;
      for (size_t k = from + m; k + m <= n; ++k)
        jump = std::max(jump, stats::Median(std::span(s.value).subspan(k, m)) -
                                  stats::Median(std::span(s.value).subspan(k - m, m)));
      j.Num("step_share", jump / (current - best));
    }
    // The largest excursion of the smoothed curve above its best so far, wherever it was, and
    // where it came back within 2x (log) of that best: a blow-up that has since recovered. It
    // starts from the last point at that best (a rolling median repeats a value across windows).
    size_t rmin = f, ex_from = f, ex_peak = f;
    double ex = 0;
    for (size_t i = f; i < n; ++i) {
      if (sm[i] <= sm[rmin]) rmin = i;
      if (sm[i] - sm[rmin] > ex) ex = sm[i] - sm[rmin], ex_from = rmin, ex_peak = i;
    }
    if (s.log && ex > 0) {
      j.Num("excursion_ratio", std::exp(ex)).Num("excursion_from_step", s.step[ex_from])
          .Num("excursion_peak_step", s.step[ex_peak]);
      for (size_t i = ex_peak; i < n; ++i)
        if (sm[i] - sm[ex_from] <= std::log(2.0)) {
          j.Num("excursion_back_step", s.step[i]);
          break;
        }
    }
    // The loss's early size (median |loss| of its first tenth, 3 points at least): the unit of
    // a rise for a loss that is not positive, which has no ratio.
    std::vector<double> size(n);
    for (size_t i = 0; i < n; ++i) size[i] = std::abs(Back(s, s.value[i]));
    j.Num("early_size", EndLevels(size).first).Num("peak", Back(s, peak_after));
    j.Num("best_step", s.step[ib]).Num("best", Back(s, best)).Num("current", Back(s, current))
        .Num("initial", Back(s, initial)).Num("ratio_to_best", ratio(current, best))
        .Num("ratio_to_initial", ratio(current, initial))
        .Num("peak_ratio_to_best", ratio(peak_after, best))
        .Num("mk_z_since_best", tail.size() >= 3 ? stats::MannKendallZ(tail) : 0)
        // The later half of that stretch alone: a rise still going on, or a step long past.
        .Num("mk_z_recent", tail.size() >= 20 ? stats::MannKendallZ(std::span(tail).subspan(tail.size() / 2)) : 0)
        .Num("points_since_best", static_cast<double>(n - 1 - ib))
        .Num("frac_since_best", span > 0 ? (s.step.back() - s.step[ib]) / span : 0)
        .Num("last_step", s.step.back());
  }
  ResultJson(ctx, j);
}

// Swings of a curve around its own level: the log curve smoothed by a short rolling median
// (iid noise shrinks, swings that last several points stay), then the spread between its 10th
// and 90th percentiles as a ratio, and how often it crosses its median.
void SwingsFinal(Acc& a, sqlite3_context* ctx) {
  const size_t w = static_cast<size_t>(std::max(1.0, Arg(a, 0, 5)));
  Series s = Sorted(a, true);
  Json j;
  j.Num("n", static_cast<double>(s.value.size())).Bool("log", s.log);
  if (s.value.size() >= 4 * w && s.value.size() >= 10) {
    std::vector<double> sm = RollingMedian(s.value, w);
    sm.erase(sm.begin(), sm.begin() + static_cast<std::ptrdiff_t>(w - 1));
    const double med = stats::Median(sm);
    int64_t crossings = 0;
    for (size_t i = 1; i < sm.size(); ++i) crossings += (sm[i - 1] - med) * (sm[i] - med) < 0;
    const double q10 = stats::Quantile(sm, 0.1), q90 = stats::Quantile(sm, 0.9);
    j.Num("ratio", s.log ? std::exp(q90 - q10) : (q10 > 0 ? q90 / q10 : NAN))
        .Num("level", Back(s, med)).Num("crossings", static_cast<double>(crossings))
        .Num("mk_z", stats::MannKendallZ(s.value));
    // The same around the stretch's trend (a Theil-Sen line): swings riding on a descent.
    // serial_z: is what is left of the unsmoothed curve around that line more than
    // independent noise (stats::RankVonNeumannZ)?
    const double slope = stats::TheilSenSlope(s.step, s.value);
    std::vector<double> resid(s.value.size());
    for (size_t i = 0; i < resid.size(); ++i) resid[i] = s.value[i] - slope * s.step[i];
    const double icpt = stats::Median(resid);
    for (double& r : resid) r -= icpt;
    std::vector<double> dsm(sm.size());
    for (size_t i = 0; i < sm.size(); ++i) dsm[i] = sm[i] - slope * s.step[i + w - 1] - icpt;
    const double dmed = stats::Median(dsm);
    int64_t dcross = 0;
    for (size_t i = 1; i < dsm.size(); ++i) dcross += (dsm[i - 1] - dmed) * (dsm[i] - dmed) < 0;
    const double d10 = stats::Quantile(dsm, 0.1), d90 = stats::Quantile(dsm, 0.9);
    j.Num("trend_ratio", s.log ? std::exp(d90 - d10) : NAN)
        .Num("trend_crossings", static_cast<double>(dcross))
        .Num("serial_z", stats::RankVonNeumannZ(resid));
  }
  ResultJson(ctx, j);
}

// Where a swinging curve began to swing (stats::SwingOnset): the log curve smoothed by a
// rolling median of `smooth` points, the swing period in points given by the caller (the rule
// knows it from the swings' crossings; a periodogram of so few swings is unreliable). NULL when
// too short to tell.
void SwingOnsetFinal(Acc& a, sqlite3_context* ctx) {
  const size_t w = static_cast<size_t>(std::max(1.0, Arg(a, 0, 5)));
  Series s = Sorted(a, true);
  const size_t n = s.value.size();
  if (n < 30) return sqlite3_result_null(ctx);
  std::vector<double> sm = RollingMedian(s.value, w);
  // RollingMedian trails by (w - 1) / 2 points: shift it back to centre it.
  const size_t lag = (w - 1) / 2;
  sm.erase(sm.begin(), sm.begin() + static_cast<std::ptrdiff_t>(lag));
  double period = std::max(6.0, Arg(a, 1, static_cast<double>(n) / 8));
  // The search is O(points x period): past 2,000 points it runs on bin medians, the period
  // scaled to bins, so a long run with few, slow swings stays cheap.
  const stats::Binned b =
      stats::BinnedMedians(std::span(s.step).first(sm.size()), sm, 2000);
  period = std::max(6.0, period * static_cast<double>(b.y.size()) / static_cast<double>(sm.size()));
  const int64_t k = stats::SwingOnset(b.y, static_cast<size_t>(period));
  if (k < 0) return sqlite3_result_null(ctx);
  // The first point of bin k (BinnedMedians' bins are [k n / bins, (k + 1) n / bins)): a step
  // the series has, where a bin's median step may not be.
  const size_t first = static_cast<size_t>(k) * sm.size() / b.y.size();
  sqlite3_result_double(ctx, s.step[first]);
}

// The first step where the curve, smoothed by a centered rolling median of `window` points,
// is at or below `threshold`: where a noisy curve really reaches a level (a raw point gets
// there early by noise). NULL when it never does.
void FirstBelowFinal(Acc& a, sqlite3_context* ctx) {
  const double threshold = Arg(a, 0, 0);
  const size_t w = static_cast<size_t>(std::max(1.0, Arg(a, 1, 5)));
  Series s = Sorted(a, false);
  const size_t n = s.value.size(), half = w / 2;
  for (size_t i = 0; i < n; ++i) {
    const size_t lo = i >= half ? i - half : 0, hi = std::min(n, i + half + 1);
    if (stats::Median(std::span(s.value).subspan(lo, hi - lo)) <= threshold)
      return sqlite3_result_double(ctx, s.step[i]);
  }
  sqlite3_result_null(ctx);
}

void BestFinal(Acc& a, sqlite3_context* ctx) {
  Series s = Sorted(a, false);
  stats::BestSoFar b = stats::BestSoFarMin(s.value, Arg(a, 0, 1e-3));
  Json j;
  j.Num("n", static_cast<double>(s.value.size()));
  if (b.best_index >= 0) {
    j.Num("best_step", s.step[b.best_index]).Num("best", b.best)
        .Num("since_points", static_cast<double>(b.since))
        .Num("since_steps", s.step.back() - s.step[b.best_index])
        .Num("first_step", s.step.front()).Num("last_step", s.step.back())
        .Num("first", s.value.front()).Num("last", s.value.back());
  }
  ResultJson(ctx, j);
}

std::vector<double> ParseNumberList(const std::string& text) {
  std::vector<double> out;
  const char* p = text.c_str();
  while (*p) {
    char* end = nullptr;
    const double v = std::strtod(p, &end);
    if (end == p) {
      ++p;
      continue;
    }
    out.push_back(v);
    p = end;
  }
  return out;
}

// The level change across each boundary step: lines through the `w` points either side, read at
// the boundary, in standard errors of their difference (sd: the series' point-to-point noise). The same at mid-epoch points
// gives a control: a trend shifts every window alike, a boundary effect only the boundaries.
struct Shift {
  bool ok = false;
  double before = 0, after = 0, z = 0;
};

Shift ShiftAt(const Series& s, double at, size_t w, double sd) {
  const size_t k0 = static_cast<size_t>(std::lower_bound(s.step.begin(), s.step.end(), at) - s.step.begin());
  Shift out;
  // The given step is only known to within the logging interval of the tag that marks it
  // (an epoch tag logged every 10 steps puts the boundary up to 10 steps late): split where
  // the medians differ most within half a window of it. Controls are placed the same way.
  const size_t r = w / 2;
  size_t k = k0;
  double best = -1;
  for (size_t c = k0 >= r ? k0 - r : 0; c <= k0 + r; ++c) {
    if (c < w || c + w > s.step.size()) continue;
    const double d = std::fabs(stats::Median(std::span(s.value.data() + c, w)) -
                               stats::Median(std::span(s.value.data() + c - w, w)));
    if (d > best) best = d, k = c;
  }
  if (best < 0) return out;
  // The discontinuity: a line through each window (Theil–Sen over positions), both read at the
  // boundary (position k - 0.5). A trend through both windows cancels; only a break remains.
  std::vector<double> xb(w), xa(w);
  for (size_t i = 0; i < w; ++i) {
    xb[i] = static_cast<double>(k - w + i);
    xa[i] = static_cast<double>(k + i);
  }
  std::span<const double> before(s.value.data() + k - w, w), after(s.value.data() + k, w);
  const double edge = static_cast<double>(k) - 0.5;
  auto level_at = [&](const std::vector<double>& x, std::span<const double> y) {
    const double slope = stats::TheilSenSlope(x, y);
    std::vector<double> icpt(w);
    for (size_t i = 0; i < w; ++i) icpt[i] = y[i] - (std::isnan(slope) ? 0 : slope) * x[i];
    return stats::Median(icpt) + (std::isnan(slope) ? 0 : slope) * edge;
  };
  out.before = level_at(xb, before);
  out.after = level_at(xa, after);
  // A line's value at a window's end has an SE of about 2 sd / sqrt(w); two of them.
  const double se = sd * std::sqrt(8.0 / static_cast<double>(w));
  const double diff = out.after - out.before;
  out.z = se > 0 ? diff / se : (diff > 0 ? 1e9 : diff < 0 ? -1e9 : 0);
  out.ok = true;
  return out;
}

void BoundaryJumpsFinal(Acc& a, sqlite3_context* ctx) {
  const size_t w = static_cast<size_t>(std::max(3.0, Arg(a, 1, 10)));
  const double zthr = Arg(a, 2, 3);
  Series s = Sorted(a, true);
  std::vector<double> bounds = ParseNumberList(a.text_arg);
  std::sort(bounds.begin(), bounds.end());
  Json jumps = Json::Array();
  int64_t evaluated = 0, up = 0, down = 0, run_up = 0, run_down = 0, best_up = 0, best_down = 0;
  // Runs of boundaries whose shift merely has the same sign (for the folded test below).
  int64_t sign_up = 0, sign_down = 0, best_sign_up = 0, best_sign_down = 0;
  double first_up = NAN, first_down = NAN, last_up = NAN, last_down = NAN;
  std::vector<double> boundary_abs, control_abs;
  const double sd = stats::NoiseSd(s.value);
  for (size_t i = 0; i < bounds.size(); ++i) {
    const double b = bounds[i];
    if (i + 1 < bounds.size())
      if (Shift c = ShiftAt(s, (b + bounds[i + 1]) / 2, w, sd); c.ok) control_abs.push_back(std::fabs(c.z));
    Shift sh = ShiftAt(s, b, w, sd);
    if (!sh.ok) continue;
    evaluated++;
    boundary_abs.push_back(std::fabs(sh.z));
    const bool is_up = sh.z > zthr, is_down = sh.z < -zthr;
    run_up = is_up ? run_up + 1 : 0;
    run_down = is_down ? run_down + 1 : 0;
    best_up = std::max(best_up, run_up);
    best_down = std::max(best_down, run_down);
    sign_up = sh.z > 0 ? sign_up + 1 : 0;
    sign_down = sh.z < 0 ? sign_down + 1 : 0;
    best_sign_up = std::max(best_sign_up, sign_up);
    best_sign_down = std::max(best_sign_down, sign_down);
    if (is_up) {
      up++;
      if (std::isnan(first_up)) first_up = b;
      last_up = b;
    }
    if (is_down) {
      down++;
      if (std::isnan(first_down)) first_down = b;
      last_down = b;
    }
    Json e;
    e.Num("step", b).Num("before", Back(s, sh.before)).Num("after", Back(s, sh.after)).Num("z", sh.z);
    jumps.Push(e);
  }
  Json j;
  j.Num("boundaries", static_cast<double>(bounds.size())).Num("evaluated", static_cast<double>(evaluated))
      .Num("up", static_cast<double>(up)).Num("down", static_cast<double>(down))
      .Num("max_consecutive_up", static_cast<double>(best_up))
      .Num("max_consecutive_down", static_cast<double>(best_down))
      .Num("first_up_step", first_up).Num("last_up_step", last_up)
      .Num("first_down_step", first_down).Num("last_down_step", last_down)
      .Num("boundary_median_abs_z", stats::Median(boundary_abs))
      .Num("control_median_abs_z", stats::Median(control_abs))
      .Nested("jumps", jumps.LastItems(12))
      .Num("max_same_sign_up", static_cast<double>(best_sign_up))
      .Num("max_same_sign_down", static_cast<double>(best_sign_down))
      .Num("first_boundary", bounds.empty() ? NAN : bounds.front());
  if (stats::EpochFold f = stats::FoldedEpochContrast(s.step, s.value, bounds); f.ok) {
    j.Num("folded_z", f.z).Num("folded_control_z", f.control_z)
        .Num("folded_effect", s.log ? std::expm1(f.effect) : f.effect);
  }
  ResultJson(ctx, j);
}

void PeriodFinal(Acc& a, sqlite3_context* ctx) {
  Series s = Sorted(a, true);
  stats::Period p = stats::DominantPeriod(s.value, static_cast<int64_t>(Arg(a, 0, 10)),
                                          static_cast<int64_t>(Arg(a, 1, 1000)));
  Json j;
  j.Num("n", static_cast<double>(s.value.size())).Num("period_points", static_cast<double>(p.period))
      .Num("strength", p.strength).Num("trough", p.trough);
  if (p.period > 0 && s.step.size() >= 2) {
    const double gap = (s.step.back() - s.step.front()) / static_cast<double>(s.step.size() - 1);
    // The phase: where in the period the curve rises most (mean difference by position), i.e.
    // where a sawtooth's boundary falls. Reported as the first such step.
    std::vector<double> rise(static_cast<size_t>(p.period), 0), count(static_cast<size_t>(p.period), 0);
    for (size_t i = 1; i < s.value.size(); ++i) {
      rise[i % rise.size()] += s.value[i] - s.value[i - 1];
      count[i % rise.size()] += 1;
    }
    size_t best = 0;
    for (size_t k = 0; k < rise.size(); ++k)
      if (count[k] > 0 && rise[k] / count[k] > rise[best] / std::max(1.0, count[best])) best = k;
    // Position 0's first difference is at index `period` (differences start at index 1);
    // DominantPeriod keeps period <= n / 3, so that index exists.
    j.Num("period_steps", p.period * gap).Num("phase_step", s.step[best == 0 ? rise.size() : best]);
  }
  ResultJson(ctx, j);
}

void PowerLawFinal(Acc& a, sqlite3_context* ctx) {
  Series s = Sorted(a, false);
  stats::PowerLaw f = stats::FitPowerLaw(s.step, s.value);
  Json j;
  j.Bool("ok", f.ok);
  if (f.ok) {
    const double target = Arg(a, 0, s.step.empty() ? 0 : s.step.back());
    j.Num("e", f.e).Num("a", f.a).Num("alpha", f.alpha).Num("r2", f.r2).Num("rmse", f.rmse)
        .Num("target_step", target).Num("forecast", f.Predict(target));
  }
  ResultJson(ctx, j);
}

// Eight levels of block; '×' marks a bin holding a non-finite value.
void SparklineFinal(Acc& a, sqlite3_context* ctx) {
  static const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  const size_t width = static_cast<size_t>(std::clamp(Arg(a, 0, 40), 4.0, 200.0));
  Series s = Sorted(a, false);
  std::vector<double> bad = a.bad_steps;
  std::sort(bad.begin(), bad.end());
  double lo_step = s.step.empty() ? 0 : s.step.front(), hi_step = s.step.empty() ? 0 : s.step.back();
  if (!bad.empty()) {
    lo_step = s.step.empty() ? bad.front() : std::min(lo_step, bad.front());
    hi_step = s.step.empty() ? bad.back() : std::max(hi_step, bad.back());
  }
  if (s.step.empty() && bad.empty()) return sqlite3_result_text(ctx, "", 0, SQLITE_STATIC);
  const double span = std::max(1.0, hi_step - lo_step);
  const size_t bins = std::min(width, s.step.size() + bad.size());
  auto bin_of = [&](double st) {
    return std::min(bins - 1, static_cast<size_t>((st - lo_step) / span * static_cast<double>(bins)));
  };
  std::vector<double> sum(bins, 0), cnt(bins, 0);
  std::vector<bool> nonfinite(bins, false);
  for (size_t i = 0; i < s.step.size(); ++i) {
    sum[bin_of(s.step[i])] += s.value[i];
    cnt[bin_of(s.step[i])] += 1;
  }
  for (double b : bad) nonfinite[bin_of(b)] = true;
  double lo = INFINITY, hi = -INFINITY;
  for (size_t b = 0; b < bins; ++b)
    if (cnt[b] > 0) {
      lo = std::min(lo, sum[b] / cnt[b]);
      hi = std::max(hi, sum[b] / cnt[b]);
    }
  std::string out;
  for (size_t b = 0; b < bins; ++b) {
    if (nonfinite[b]) out += "×";
    else if (cnt[b] == 0) out += " ";
    else {
      const double m = sum[b] / cnt[b];
      const int level = hi > lo ? static_cast<int>(std::lround((m - lo) / (hi - lo) * 7)) : 3;
      out += kBlocks[std::clamp(level, 0, 7)];
    }
  }
  sqlite3_result_text(ctx, out.data(), static_cast<int>(out.size()), SQLITE_TRANSIENT);
}

// tw_glob(pattern, text): the role patterns' glob (roles.h GlobMatch: case-insensitive, `*`
// crossing `/`), for [[alert]] rules' run and tag patterns; NULL for a NULL argument.
void GlobFn(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const unsigned char* pattern = sqlite3_value_text(argv[0]);
  const unsigned char* text = sqlite3_value_text(argv[1]);
  if (!pattern || !text) return sqlite3_result_null(ctx);
  sqlite3_result_int(ctx, GlobMatch(reinterpret_cast<const char*>(pattern), reinterpret_cast<const char*>(text)));
}

// tw_writer_alive(path): whether the process that writes an event file still runs: 1 or 0 on
// this host (base/writer_process.h: a pid reused by a later process is not the writer), NULL
// for another host or a name that does not say who wrote it.
void WriterAliveFn(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const unsigned char* raw = sqlite3_value_text(argv[0]);
  if (!raw) return sqlite3_result_null(ctx);
  const std::optional<WriterId> w = ParseWriterId(reinterpret_cast<const char*>(raw));
  if (!w) return sqlite3_result_null(ctx);
  const WriterState state = ProbeThisHost(*w);
  if (state == WriterState::kUnknown) return sqlite3_result_null(ctx);
  sqlite3_result_int(ctx, state == WriterState::kAlive ? 1 : 0);
}

// tw_hist_shares(buckets, min, max [, tol = 0.25]): {count, zero, negative, positive}, the
// shares of a stored histogram's count at zero (within tol x its largest |value|), below and
// above it (stats::HistogramShares); NULL for a blob that is not f64 triples or holds nothing.
void HistSharesFn(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  const void* blob = sqlite3_value_blob(argv[0]);
  const int bytes = sqlite3_value_bytes(argv[0]);
  if (!blob || bytes <= 0 || bytes % (3 * sizeof(double)) != 0 || sqlite3_value_type(argv[1]) == SQLITE_NULL ||
      sqlite3_value_type(argv[2]) == SQLITE_NULL)
    return sqlite3_result_null(ctx);
  std::vector<double> triples(static_cast<size_t>(bytes) / sizeof(double));
  std::memcpy(triples.data(), blob, static_cast<size_t>(bytes));  // the store writes them native-endian
  const double tol = argc > 3 && sqlite3_value_type(argv[3]) != SQLITE_NULL ? sqlite3_value_double(argv[3]) : 0.25;
  const stats::HistShares h =
      stats::HistogramShares(triples, sqlite3_value_double(argv[1]), sqlite3_value_double(argv[2]), tol);
  if (!h.ok) return sqlite3_result_null(ctx);
  Json j;
  j.Num("count", h.count).Num("zero", h.zero).Num("negative", h.negative).Num("positive", h.positive);
  ResultJson(ctx, j);
}

struct Def {
  const char* name;
  int nargs;
  bool with_step;
  void (*final)(sqlite3_context*);
};

const Def kDefs[] = {
    {"tw_median", 1, false, FinalFn<MedianFinal>},
    {"tw_mad", 1, false, FinalFn<MadFinal>},
    {"tw_quantile", 2, false, FinalFn<QuantileFinal>},
    {"tw_noise_sd", 2, true, FinalFn<NoiseFinal>},
    {"tw_hinge_onset", 2, true, FinalFn<HingeFinal>},
    {"tw_trend", 2, true, FinalFn<TrendFinal>},
    {"tw_ends", 2, true, FinalFn<EndsFinal>},
    {"tw_ends", 3, true, FinalFn<EndsFinal>},
    {"tw_ends", 4, true, FinalFn<EndsFinal>},
    {"tw_spikes", 5, true, FinalFn<SpikesFinal>},
    {"tw_spikes", 6, true, FinalFn<SpikesFinal>},
    {"tw_local_spikes", 4, true, FinalFn<LocalSpikesFinal>},
    {"tw_local_spikes", 5, true, FinalFn<LocalSpikesFinal>},
    {"tw_local_spikes", 6, true, FinalFn<LocalSpikesFinal>},
    {"tw_local_spikes", 7, true, FinalFn<LocalSpikesFinal>},
    {"tw_divergence", 3, true, FinalFn<DivergenceFinal>},
    {"tw_best", 3, true, FinalFn<BestFinal>},
    {"tw_swings", 3, true, FinalFn<SwingsFinal>},
    {"tw_first_below", 4, true, FinalFn<FirstBelowFinal>},
    {"tw_boundary_jumps", 5, true, FinalFn<BoundaryJumpsFinal>},
    {"tw_swing_onset", 4, true, FinalFn<SwingOnsetFinal>},
    {"tw_period", 4, true, FinalFn<PeriodFinal>},
    {"tw_powerlaw", 3, true, FinalFn<PowerLawFinal>},
    {"tw_sparkline", 3, true, FinalFn<SparklineFinal>},
};

}  // namespace

Status RegisterSqlFunctions(store::Db& db) {
  if (sqlite3_create_function_v2(db.raw(), "tw_writer_alive", 1, SQLITE_UTF8, nullptr, WriterAliveFn,
                                 nullptr, nullptr, nullptr) != SQLITE_OK)
    return db.Error("registering tw_writer_alive");
  if (sqlite3_create_function_v2(db.raw(), "tw_glob", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr, GlobFn,
                                 nullptr, nullptr, nullptr) != SQLITE_OK)
    return db.Error("registering tw_glob");
  for (int nargs : {3, 4})
    if (sqlite3_create_function_v2(db.raw(), "tw_hist_shares", nargs, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                                   HistSharesFn, nullptr, nullptr, nullptr) != SQLITE_OK)
      return db.Error("registering tw_hist_shares");
  for (const Def& d : kDefs) {
    const int rc = sqlite3_create_function_v2(db.raw(), d.name, d.nargs, SQLITE_UTF8, nullptr,
                                              nullptr, d.with_step ? StepFn<true> : StepFn<false>,
                                              d.final, nullptr);
    if (rc != SQLITE_OK) return db.Error(std::string("registering ") + d.name);
  }
  return Status::Ok();
}

std::string RecentSparkline(store::Db& db, int64_t series_id) {
  Result<store::Stmt> q = db.Prepare(
      "SELECT tw_sparkline(step, value, 40) FROM (SELECT step, value FROM scalars "
      "WHERE series_id = ? AND superseded = 0 ORDER BY step DESC LIMIT 400)");
  if (!q.ok()) return "";
  q->Bind(1, series_id);
  Result<bool> r = q->Step();
  return r.ok() && *r && !q->IsNull(0) ? q->Text(0) : "";
}

}  // namespace tw::diagnose

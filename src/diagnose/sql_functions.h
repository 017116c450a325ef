// SQL functions the rules call, registered on a diagnosis connection. Numerics live in
// stats.h; these adapt them to SQLite: aggregates take (step, value) rows in any order (they
// sort by step), skip NULL and non-finite values, and return JSON objects the rule's SQL reads
// with json_extract. docs/diagnosis.md lists each function, its arguments and its output.
//
//   tw_median(x), tw_mad(x), tw_quantile(x, q)          plain aggregates over finite x
//   tw_noise_sd(step, value)                             point-to-point noise (second differences)
//   tw_hinge_onset(step, value)                          where a flat stretch turns into a rise
//   tw_trend(step, value)                                Theil–Sen slope, Mann–Kendall z, ...
//   tw_spikes(step, value, window, z, recover_points [, recover_ratio])
//                                                        robust z on log(value), spike events
//   tw_divergence(step, value, window)                   best and current smoothed level
//   tw_best(step, value, min_delta_rel)                  best-so-far (minimizing) and since when
//   tw_swings(step, value, window)                       swing ratio and median crossings
//   tw_swing_onset(step, value, window, period)          where a curve began to swing
//   tw_first_below(step, value, threshold, window)       first step the rolling median reaches it
//   tw_boundary_jumps(step, value, boundaries, window)   level change across given steps
//   tw_period(step, value, min_points, max_points)       dominant period of the differences
//   tw_powerlaw(step, value, target_step)                L = e + a t^-alpha fit and forecast
//   tw_sparkline(step, value, width)                     a text sparkline of the curve
//   tw_writer_alive(path)                                the event file's writer still runs (this host)
//   tw_glob(pattern, text)                               the role patterns' glob ([[alert]] rules)
//   tw_hist_shares(buckets, min, max [, tol])            a histogram's mass at zero, below, above
#pragma once

#include <string>

#include "base/status.h"
#include "store/db.h"

namespace tw::diagnose {

Status RegisterSqlFunctions(store::Db& db);

// A series' recent curve (its last 400 live points) as 40 block characters (tw_sparkline), for
// messages; "" where the connection lacks tw_sparkline or the series has no points.
std::string RecentSparkline(store::Db& db, int64_t series_id);

}  // namespace tw::diagnose

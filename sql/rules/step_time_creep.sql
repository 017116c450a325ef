-- id: step_time_creep
-- title: Steps are getting slower
-- severity: warning
-- roles_any: step_time, steps_per_sec
-- cause: Work per step grows: a leak that makes the allocator or garbage collector work harder,
--   a growing Python-side structure walked every step, data loading falling behind (workers
--   starved, a cache thrashing), or an operation that fell back to the CPU.
-- fix: Profile two windows (torch.profiler, py-spy) and compare; check memory at the same time,
--   the data loader's wait time (num_workers, pin_memory) and host CPU use.
-- param recent = 30: points in the recent window
-- param ratio = 1.25: recent median over the run's median, at least
-- param trend_z = 3: Mann–Kendall z over the run, at least (a creep, not a blip)
-- param skip_frac = 0.05: the first part of the run is skipped (compilation, warmup)
--
-- A throughput (role steps_per_sec: samples/s, tokens/s, it/s) is read as its inverse, a time
-- per unit of work: throughput falling to 0.8x is time per step rising to 1.25x, judged the
-- same way. A speed measured during evaluation (eval/steps_per_second) is not training's.
WITH series AS MATERIALIZED (
  -- Time per unit of work: a step time as logged, a throughput inverted.
  SELECT series_id, tag, role, step, CASE WHEN role = 'steps_per_sec' THEN 1.0 / value ELSE value END AS value
  FROM role_points WHERE run_id = :run_id AND role IN ('step_time', 'steps_per_sec') AND value_class = 0
    AND NOT (role = 'steps_per_sec' AND (value <= 0 OR lower(tag) GLOB '*eval*' OR lower(tag) GLOB '*val/*'
                                         OR lower(tag) GLOB '*test*'))
), span AS MATERIALIZED (
  SELECT series_id, min(step) AS lo, max(step) AS hi FROM series GROUP BY series_id
), pts AS (
  SELECT s.series_id, tag, role, step, value,
         row_number() OVER (PARTITION BY s.series_id ORDER BY step DESC) AS k
  FROM series s JOIN span USING (series_id) WHERE step >= span.lo + :skip_frac * (span.hi - span.lo)
), agg AS MATERIALIZED (
  SELECT series_id, tag, role, count(*) AS n, tw_median(value) AS med, tw_trend(step, value) AS j,
         (SELECT tw_median(p2.value) FROM pts p2 WHERE p2.series_id = pts.series_id AND p2.k <= :recent) AS recent_med,
         min(step) AS first_step, max(step) AS last_step
  FROM pts GROUP BY series_id
), onset AS MATERIALIZED (
  -- Where the creep began: a flat-then-rising hinge fitted to the whole series.
  SELECT agg.*, (SELECT tw_hinge_onset(p.step, p.value) FROM series p WHERE p.series_id = agg.series_id) AS since
  FROM agg
)
SELECT series_id, COALESCE(since, first_step) AS onset_step, first_step, last_step,
       CASE WHEN role = 'steps_per_sec'
            THEN tag || ': the last ' || CAST(:recent AS INTEGER) || ' points'' median is ' || printf('%.3g', 1 / recent_med) ||
                 ', ' || printf('%.2f', med / recent_med) || 'x the run''s median ' || printf('%.3g', 1 / med) ||
                 ', and it has been falling steadily (trend z ' || printf('%.1f', -json_extract(j, '$.mk_z')) || ')'
            ELSE tag || ': the last ' || CAST(:recent AS INTEGER) || ' steps took ' || printf('%.3g', recent_med) || ' (median), ' ||
                 printf('%.2f', recent_med / med) || 'x the run''s median ' || printf('%.3g', med) ||
                 ', and it has been rising steadily (trend z ' || printf('%.1f', json_extract(j, '$.mk_z')) || ')'
       END AS message,
       json_object('series', tag, 'role', role, 'recent_median', recent_med, 'run_median', med, 'ratio', recent_med / med,
                   'trend_z', json_extract(j, '$.mk_z'), 'start', json_extract(j, '$.start'),
                   'end', json_extract(j, '$.end'), 'inverted', role = 'steps_per_sec') AS evidence
FROM onset WHERE n >= 2 * :recent AND med > 0 AND recent_med >= :ratio * med
  AND json_extract(j, '$.mk_z') >= :trend_z

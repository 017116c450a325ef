-- id: lr_schedule_misaligned
-- title: Learning-rate schedule does not fit the run
-- severity: warning
-- roles: lr
-- cause: The schedule was built for a different number of steps than the run takes: cosine or
--   linear decay with total steps (T_max, num_training_steps) computed from another epoch count,
--   batch size or dataset size, or a scheduler stepped per batch when it expected epochs.
-- fix: Build the schedule from the real total: steps per epoch x epochs (after gradient
--   accumulation), and check the scheduler is stepped as often as its total assumes.
-- param floor_frac = 0.15: the LR sat at its floor for at least this fraction of the run
-- param min_levels = 10: distinct LR values before the floor (a continuous decay, not a step schedule)
-- param long_warmup = 0.2: a warmup longer than this fraction of the run is odd
-- param constant_min_steps = 5000: a run this long with one LR value surely meant a schedule
--
-- Three readings of the LR curve, each a row: decayed to its floor long before the end; warmup
-- over an implausibly large part of the run; never changed in a long run (a question, info).
WITH lr AS (
  SELECT series_id, tag, step, value FROM role_points
  WHERE run_id = :run_id AND role = 'lr' AND value_class = 0
), s0 AS MATERIALIZED (
  SELECT series_id, tag, max(value) AS hi, min(step) AS first_step,
         max(step) AS last_step, count(DISTINCT value) AS levels, count(*) AS n
  FROM lr GROUP BY series_id
), peak AS MATERIALIZED (
  SELECT s0.*, (SELECT min(step) FROM lr x WHERE x.series_id = s0.series_id AND x.value = s0.hi) AS peak_at
  FROM s0
), s AS MATERIALIZED (
  -- The floor: the lowest LR after the peak (a warmup may start lower than the decay ends).
  SELECT peak.*, (SELECT min(lr.value) FROM lr WHERE lr.series_id = peak.series_id AND lr.step >= peak.peak_at) AS lo
  FROM peak
), above AS MATERIALIZED (
  -- The last step above the floor; each subquery runs once per series (a correlated one
  -- inside a WHERE would run once per row).
  SELECT s.*,
         (SELECT max(step) FROM lr WHERE lr.series_id = s.series_id AND lr.value > s.lo + 1e-9 * s.hi) AS last_above,
         (SELECT min(step) FROM lr WHERE lr.series_id = s.series_id AND lr.value = s.hi) AS peak_step,
         -- The run's end as the LR series sees it: its own last point. (Other series of the
         -- directory may come from another writer sharing it, e.g. several HF Trainer runs.)
         s.last_step AS run_last
  FROM s WHERE n >= 10
), floor AS MATERIALIZED (
  SELECT above.*, (SELECT min(step) FROM lr WHERE lr.series_id = above.series_id
                     AND lr.step > COALESCE(above.last_above, -1)) AS floor_step
  FROM above
)
SELECT series_id, floor_step AS onset_step, floor_step AS first_step, run_last AS last_step,
       'warning' AS severity,
       tag || ' reached its floor ' || printf('%.3g', lo) || ' at step ' || floor_step || ' and has stayed there for ' ||
         printf('%.0f', 100.0 * (run_last - floor_step) / (run_last - first_step)) ||
         '% of the run (to step ' || run_last || '): the schedule ended long before the training did' AS message,
       json_object('series', tag, 'floor', lo, 'peak', hi, 'floor_step', floor_step, 'last_step', run_last,
                   'fraction_at_floor', 1.0 * (run_last - floor_step) / (run_last - first_step),
                   'distinct_values', levels) AS evidence,
       NULL AS cause, NULL AS fix
FROM floor
WHERE hi > 0 AND lo <= 0.5 * hi AND levels >= :min_levels AND run_last > first_step
  AND 1.0 * (run_last - floor_step) / (run_last - first_step) >= :floor_frac
UNION ALL
SELECT series_id, peak_step, first_step, peak_step, 'info',
       tag || ' warms up until step ' || peak_step || ', ' ||
         printf('%.0f', 100.0 * (peak_step - first_step) / (run_last - first_step)) ||
         '% of the run so far: an unusually long warmup',
       json_object('series', tag, 'peak_step', peak_step, 'peak', hi,
                   'warmup_fraction', 1.0 * (peak_step - first_step) / (run_last - first_step)),
       'A warmup sized in epochs or samples where steps were meant, or a warmup ratio applied to the wrong total.',
       'Check num_warmup_steps against the total steps; 1-5% of the run is usual.'
FROM floor
WHERE hi > 0 AND peak_step > first_step AND run_last > first_step
  AND 1.0 * (peak_step - first_step) / (run_last - first_step) >= :long_warmup
  AND (SELECT value FROM lr WHERE lr.series_id = floor.series_id ORDER BY step DESC LIMIT 1) <= 0.9 * hi
UNION ALL
SELECT series_id, first_step, first_step, last_step, 'info',
       tag || ' has been ' || printf('%.3g', hi) || ' at every one of ' || n || ' points over ' ||
         (last_step - first_step) || ' steps: was a schedule (warmup, decay) meant?',
       json_object('series', tag, 'value', hi, 'points', n, 'steps', last_step - first_step),
       'A constant learning rate: no scheduler was attached, or it is never stepped.',
       'If you meant a schedule, check scheduler.step() is called; if constant is deliberate, ignore this.'
FROM floor
WHERE levels = 1 AND last_step - first_step >= :constant_min_steps

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
-- param min_levels = 10: distinct LR values from the peak to the floor (a continuous decay, not a
--   step schedule; a warmup's ramp before the peak does not count)
-- param step_floor_frac = 0.5: a step schedule (fewer levels) sat at its floor for at least this
--   fraction of the run: the classic recipes drop late (ResNet at 1/3 and 2/3 of the epochs,
--   CIFAR at 50% and 75%, detectron2 near the end) and spend a third of the run there at most
-- param min_peak_frac = 0.05: a step schedule whose first drop comes within this fraction of the
--   run after its peak (a milestone at the warmup's end: no time at the LR it warmed up to) is
--   judged as a decay, by floor_frac
-- param long_warmup = 0.2: a warmup longer than this fraction of the run is odd
-- param constant_min_steps = 5000: a run this long with one LR value surely meant a schedule
-- param warmup_start = 0.5: a warmup starts at most this fraction of the peak (an LR that starts
--   at its peak and falls, as YOLO's bias LR does during its warmup, is no warmup)
-- param at_peak = 0.95: a run that ended with its LR at least this fraction of its peak ...
-- param ended_silence = 600: ... and is over: an exit code or a logged stop, or silent this many
--   seconds and ten of its logging intervals
--
-- Four readings of the LR curve, each a row: decayed to its floor long before the end (a
-- continuous decay, or steps that reached their last level before half the run); a warmup
-- that never ended (a warning: the run is over with the LR still rising, or at its peak when a
-- decay had begun or the hyperparameters plan one); warmup over an implausibly large part of
-- the run (info); never changed in a long run (a question, info). A warmup still rising in a
-- live run is what every warmup looks like, so the warning waits for the run's end (a run that
-- a daemon saw end without a new write is judged when it next examines the run).
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
  SELECT peak.*, (SELECT min(lr.value) FROM lr WHERE lr.series_id = peak.series_id AND lr.step >= peak.peak_at) AS lo,
         -- Steps down from the peak: a warmup's ramp has many values, and a step schedule
         -- after it is still a step schedule.
         (SELECT count(DISTINCT lr.value) FROM lr WHERE lr.series_id = peak.series_id AND lr.step >= peak.peak_at) AS decay_levels
  FROM peak
), above AS MATERIALIZED (
  -- The last step above the floor; each subquery runs once per series (a correlated one
  -- inside a WHERE would run once per row).
  SELECT s.*,
         (SELECT max(step) FROM lr WHERE lr.series_id = s.series_id AND lr.value > s.lo + 1e-9 * s.hi) AS last_above,
         (SELECT min(step) FROM lr WHERE lr.series_id = s.series_id AND lr.value = s.hi) AS peak_step,
         (SELECT max(step) FROM lr WHERE lr.series_id = s.series_id AND lr.value = s.hi) AS peak_end,
         -- The run's end as the LR series sees it: its own last point. (Other series of the
         -- directory may come from another writer sharing it, e.g. several HF Trainer runs.)
         s.last_step AS run_last
  FROM s WHERE n >= 10
), floor AS MATERIALIZED (
  SELECT above.*, (SELECT min(step) FROM lr WHERE lr.series_id = above.series_id
                     AND lr.step > COALESCE(above.last_above, -1)) AS floor_step,
         (SELECT value FROM lr WHERE lr.series_id = above.series_id ORDER BY step LIMIT 1) AS first_value,
         (SELECT value FROM lr WHERE lr.series_id = above.series_id ORDER BY step DESC LIMIT 1) AS last_value
  FROM above
), src AS MATERIALIZED (
  SELECT DISTINCT source_run_id AS run_id FROM run_roles WHERE run_id = :run_id AND role = 'lr'
), ended AS MATERIALIZED (
  -- Whether the run is over: an exit code, a logged stop, or silence well past its rhythm.
  SELECT EXISTS (SELECT 1 FROM runs r WHERE r.run_id IN (SELECT run_id FROM src) AND r.exit_code IS NOT NULL)
         OR EXISTS (SELECT 1 FROM run_events e WHERE e.run_id IN (SELECT run_id FROM src) AND e.kind = 'stop')
         OR :now - (SELECT max(wall_time) FROM role_points WHERE run_id = :run_id AND role = 'lr')
            >= max(:ended_silence, 10 * COALESCE((SELECT tw_median(g) FROM (
                 SELECT wall_time - lag(wall_time) OVER (ORDER BY step) AS g FROM role_points
                 WHERE run_id = :run_id AND role = 'lr' AND series_id = (SELECT min(series_id) FROM floor))), 0)) AS over,
         -- A decay the hyperparameters plan: a decaying scheduler named, or more steps than ran.
         (SELECT group_concat(x, ', ') FROM (
            SELECT h.key || ' = ' || h.value_text AS x FROM hparams h
            WHERE h.run_id IN (SELECT member FROM run_family WHERE run_id = :run_id)
              AND lower(h.key) IN ('lr_scheduler_type', 'lr_scheduler', 'scheduler', 'lr_schedule', 'lr_policy',
                                   'decay_schedule', 'lr_decay_style')
              AND (lower(h.value_text) LIKE '%cos%' OR lower(h.value_text) LIKE '%linear%'
                   OR lower(h.value_text) LIKE '%poly%' OR lower(h.value_text) LIKE '%step%'
                   OR lower(h.value_text) LIKE '%exp%' OR lower(h.value_text) LIKE '%decay%')
            UNION ALL
            SELECT 'planned steps = ' || printf('%g', steps) FROM run_planned_steps
            WHERE run_id = :run_id AND steps > (SELECT max(last_step) FROM floor))) AS planned
)
SELECT series_id, floor_step AS onset_step, floor_step AS first_step, run_last AS last_step,
       'warning' AS severity,
       tag || ' reached its floor ' || printf('%.3g', lo) || ' at step ' || floor_step ||
         CASE WHEN decay_levels < :min_levels THEN ' (its last of ' || decay_levels || ' steps down from ' || printf('%.3g', hi) || ')'
              ELSE '' END || ' and has stayed there for ' ||
         printf('%.0f', 100.0 * (run_last - floor_step) / (run_last - first_step)) ||
         '% of the run (to step ' || run_last || '): the schedule ended long before the training did' AS message,
       json_object('series', tag, 'floor', lo, 'peak', hi, 'floor_step', floor_step, 'last_step', run_last,
                   'fraction_at_floor', 1.0 * (run_last - floor_step) / (run_last - first_step),
                   'distinct_values', decay_levels, 'step_schedule', decay_levels < :min_levels) AS evidence,
       CASE WHEN decay_levels < :min_levels THEN 'Step-decay milestones that do not fit the run: milestones counted in ' ||
         'epochs for a scheduler stepped every iteration (or the other way round), milestones written for a shorter ' ||
         'run, or a step size far too small.' END AS cause,
       CASE WHEN decay_levels < :min_levels THEN 'Put the milestones where the run is: in the units the scheduler is ' ||
         'stepped in (epochs or iterations), usually at about 50-75% and 75-90% of the run.' END AS fix
FROM floor
WHERE hi > 0 AND lo <= 0.5 * hi AND run_last > first_step
  AND 1.0 * (run_last - floor_step) / (run_last - first_step) >= CASE WHEN decay_levels >= :min_levels
                                                                          OR 1.0 * (peak_end - peak_step) / (run_last - first_step) < :min_peak_frac
                                                                        THEN :floor_frac ELSE :step_floor_frac END
UNION ALL
SELECT series_id, first_step, first_step, last_step, 'warning',
       tag || CASE WHEN peak_step = last_step
                   THEN ' was still rising at the end of the run: ' || printf('%.3g', first_value) || ' at step ' ||
                        first_step || ' to ' || printf('%.3g', last_value) || ' at step ' || last_step ||
                        ', its highest: the warmup never finished, so the run never trained at the LR it was set for'
                   ELSE ' warmed up from ' || printf('%.3g', first_value) || ' to its peak ' || printf('%.3g', hi) ||
                        ' at step ' || peak_step || ' (' ||
                        printf('%.0f', 100.0 * (peak_step - first_step) / (last_step - first_step)) ||
                        '% of the run) and the run ended at ' || printf('%.1f', 100.0 * last_value / hi) ||
                        '% of it' || CASE WHEN (SELECT planned FROM ended) IS NOT NULL
                                          THEN ' (' || (SELECT planned FROM ended) || ')' ELSE
                        ', its decay barely begun' END || ': the schedule was built for a far longer run'
              END,
       json_object('series', tag, 'peak_step', peak_step, 'peak', hi, 'first', first_value, 'last', last_value,
                   'warmup_fraction', 1.0 * (peak_step - first_step) / (last_step - first_step),
                   'still_rising', peak_step = last_step, 'planned', (SELECT planned FROM ended)),
       'A warmup (or a whole schedule) sized for many more steps than the run took: a warmup in epochs or samples where steps were meant, max_steps from another dataset size, or a run stopped long before its planned end.',
       'Size the warmup and the decay from the steps this run will take (1-5% warmup is usual), or let the run go on to its planned end; results from a run that never left its warmup are not its schedule''s.'
FROM floor
WHERE hi > 0 AND last_step > first_step AND n >= 5
  AND first_value <= :warmup_start * hi AND last_value >= :at_peak * hi
  AND 1.0 * (peak_step - first_step) / (last_step - first_step) >= :long_warmup
  -- (ended is computed only for the rare LR curve that got this far)
  AND (peak_step = last_step OR last_value < hi OR (SELECT planned FROM ended) IS NOT NULL)
  AND (SELECT over FROM ended)
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

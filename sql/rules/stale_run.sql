-- id: stale_run
-- title: Run stopped writing without ending
-- severity: warning
-- scope: all
-- cause: The training process hung (a deadlock in a collective, a stuck data loader worker, a
--   full disk) or died without a clean shutdown (killed for memory, preempted, a node lost).
-- fix: Check the process and its logs (dmesg for the OOM killer, the scheduler's record of the
--   job); if it died, resume from the last checkpoint; if it hangs, py-spy dump shows where.
-- param gap_mult = 10: silent for this many times its median logging interval, at least
-- param grace = 100: and longer than its slowest usual interval plus this many seconds
-- param min_silence = 300: and at least this long (writers flush every 120 s by default)
-- param horizon = 259200: runs silent for longer than this (3 days) are finished history
-- param rhythm_points = 50: recent points that define the logging rhythm
--
-- The writer's own wall times: when the newest point was logged, and how the last points
-- were spaced. A run that logged a clean end (SessionLog STOP) is never stale.
WITH main AS (
  SELECT rr.run_id, rr.series_id, rr.tag, r.name AS run
  FROM run_roles rr JOIN runs r ON r.run_id = rr.run_id
  WHERE rr.role = 'train_loss'
    AND NOT EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = rr.source_run_id AND e.kind = 'stop')
), recent AS (
  SELECT m.run_id, m.series_id, m.tag, m.run,
         (SELECT max(wall_time) FROM (SELECT wall_time FROM scalars p WHERE p.series_id = m.series_id
            AND p.superseded = 0 ORDER BY step DESC LIMIT :rhythm_points)) AS last_wall,
         (SELECT max(step) FROM scalars p WHERE p.series_id = m.series_id AND p.superseded = 0) AS last_step
  FROM main m
), fresh AS (
  SELECT * FROM recent WHERE last_wall IS NOT NULL AND :now - last_wall BETWEEN :min_silence AND :horizon
), gaps AS (
  SELECT f.*, (SELECT tw_median(g) FROM (SELECT wall_time - lag(wall_time) OVER (ORDER BY step) AS g
                 FROM (SELECT step, wall_time FROM scalars p WHERE p.series_id = f.series_id AND p.superseded = 0
                       ORDER BY step DESC LIMIT :rhythm_points)) WHERE g IS NOT NULL) AS med_gap,
              (SELECT tw_quantile(g, 0.99) FROM (SELECT wall_time - lag(wall_time) OVER (ORDER BY step) AS g
                 FROM (SELECT step, wall_time FROM scalars p WHERE p.series_id = f.series_id AND p.superseded = 0
                       ORDER BY step DESC LIMIT :rhythm_points)) WHERE g IS NOT NULL) AS p99_gap
  FROM fresh f
)
SELECT run_id, series_id, last_step AS onset_step, last_step AS first_step, last_step,
       run || ': nothing new for ' || printf('%.0f', (:now - last_wall) / 60.0) || ' min (last point: ' || tag ||
         ' at step ' || last_step || '), while it logged every ' || printf('%.3g', med_gap) ||
         ' s (median; slowest ' || printf('%.3g', p99_gap) || ' s) before, and no clean end was logged' AS message,
       json_object('last_wall_time', last_wall, 'silent_seconds', :now - last_wall, 'median_gap', med_gap,
                   'p99_gap', p99_gap, 'last_step', last_step) AS evidence
FROM gaps
WHERE med_gap IS NOT NULL
  AND :now - last_wall > max(:gap_mult * med_gap, p99_gap + :grace, :min_silence)

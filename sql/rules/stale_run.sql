-- id: stale_run
-- title: Run stopped writing before it was done
-- severity: warning
-- scope: all
-- cause: The training process hangs (a deadlock in a collective, a stuck data-loader worker, a
--   full disk) or died without finishing (killed for memory, preempted, a node lost).
-- fix: Check the process and its logs (dmesg for the OOM killer, the scheduler's record of the
--   job); if it died, resume from the last checkpoint; if it hangs, py-spy dump shows where.
-- param gap_mult = 10: silent for this many times its median logging interval, at least
-- param grace = 100: and longer than its slowest usual interval plus this many seconds
-- param min_silence = 300: and at least this long (writers flush every 120 s by default)
-- param horizon = 259200: runs silent for longer than this (3 days) are finished history
-- param rhythm_points = 50: recent points that define the logging rhythm
-- param lr_moving = 0.02: the LR fell by this much (relative) over the last 5% of its span ...
-- param lr_high = 0.15: ... while still above this fraction of its peak: mid-schedule
-- param planned_frac = 0.95: a planned end (hparams max_steps, ...) not reached by this fraction
-- param geometric_max = 0.5: a decay this close to geometric (0) rather than linear (1) has no end
--
-- Silence alone is not enough: most silent runs simply finished, and a PyTorch SummaryWriter
-- logs no end. A stale run needs evidence that it was not done: its writer process still runs
-- on this host but writes nothing (hung); its LR schedule was still decaying, well above its
-- end, when it stopped;
-- or it stopped short of a planned end in its hyperparameters. Only a schedule that heads for an
-- end says so: linear and cosine decays reach their floor at a step one can tell, while an
-- exponential decay (Keras ExponentialDecay, PyTorch ExponentialLR) shrinks by the same factor
-- forever, and a cyclic or restarting schedule falls again every cycle: stopping in either is
-- no sign of an unfinished run. A logged clean end (SessionLog
-- STOP, the HF Trainer's end-of-training summary, a W&B exit record with code 0), or a finish
-- the daemon recorded (run_finished: docs/notifications.md, run events), rules it out. The writer's wall clock is
-- compared with this machine's: a skewed clock is misjudged.
WITH main AS MATERIALIZED (
  SELECT rr.run_id, rr.series_id, rr.tag, rr.source_run_id, r.name AS run
  FROM run_roles rr JOIN runs r ON r.run_id = rr.run_id
  WHERE rr.role = 'train_loss'
    AND NOT EXISTS (SELECT 1 FROM run_events e WHERE e.run_id = rr.source_run_id AND e.kind = 'stop')
    AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.run_id = rr.source_run_id AND x.exit_code = 0)
    AND NOT EXISTS (SELECT 1 FROM series s WHERE s.run_id = rr.source_run_id AND s.tag = 'train/train_runtime')
), recent AS MATERIALIZED (
  SELECT m.*,
         (SELECT max(wall_time) FROM (SELECT wall_time FROM scalars p WHERE p.series_id = m.series_id
            AND p.superseded = 0 ORDER BY step DESC LIMIT :rhythm_points)) AS last_wall,
         (SELECT max(step) FROM scalars p WHERE p.series_id = m.series_id AND p.superseded = 0) AS last_step
  FROM main m
), silent AS MATERIALIZED (
  SELECT * FROM recent WHERE last_wall IS NOT NULL AND :now - last_wall BETWEEN :min_silence AND :horizon
), gaps AS MATERIALIZED (
  SELECT f.*, (SELECT tw_median(g) FROM (SELECT wall_time - lag(wall_time) OVER (ORDER BY step) AS g
                 FROM (SELECT step, wall_time FROM scalars p WHERE p.series_id = f.series_id AND p.superseded = 0
                       ORDER BY step DESC LIMIT :rhythm_points)) WHERE g IS NOT NULL) AS med_gap,
              (SELECT tw_quantile(g, 0.99) FROM (SELECT wall_time - lag(wall_time) OVER (ORDER BY step) AS g
                 FROM (SELECT step, wall_time FROM scalars p WHERE p.series_id = f.series_id AND p.superseded = 0
                       ORDER BY step DESC LIMIT :rhythm_points)) WHERE g IS NOT NULL) AS p99_gap
  FROM silent f
), overdue AS MATERIALIZED (
  SELECT * FROM gaps WHERE med_gap IS NOT NULL AND :now - last_wall > max(:gap_mult * med_gap, p99_gap + :grace, :min_silence)
    -- A run recorded as finished (the run lifecycle: a planned end reached, its writer gone) is
    -- not stale, unless it wrote again after that.
    AND NOT EXISTS (SELECT 1 FROM run_finished d WHERE d.run_id = gaps.run_id AND d.last_wall >= gaps.last_wall)
), evidence AS MATERIALIZED (
  SELECT o.*,
         (SELECT max(tw_writer_alive(so.path)) FROM sources so WHERE so.run_id = o.source_run_id
            AND so.status = 'active') AS alive,
         (SELECT max(rr.series_id) FROM run_roles rr WHERE rr.run_id = o.run_id AND rr.role = 'lr') AS lr_series,
         (SELECT steps FROM run_planned_steps p WHERE p.run_id = o.run_id) AS planned
  FROM overdue o
), lr_span AS MATERIALIZED (
  SELECT e.*,
         (SELECT max(value) FROM scalars WHERE series_id = e.lr_series AND superseded = 0) AS lr_peak,
         (SELECT value FROM scalars WHERE series_id = e.lr_series AND superseded = 0 ORDER BY step DESC LIMIT 1) AS lr_last,
         (SELECT max(step) - 0.05 * (max(step) - min(step)) FROM scalars WHERE series_id = e.lr_series) AS lr_before_step
  FROM evidence e
), lr AS MATERIALIZED (
  -- The LR 5% of its span before its last point; where its decay began (the first fall from a
  -- peak), whether it rose again after that (cycles, restarts), and its value halfway through
  -- the decay.
  SELECT l.*, (SELECT value FROM scalars WHERE series_id = l.lr_series AND superseded = 0
                 AND step <= l.lr_before_step ORDER BY step DESC LIMIT 1) AS lr_before,
         (SELECT min(step) FROM (SELECT step, value < lag(value) OVER (ORDER BY step) * (1 - 1e-6) AS falls
            FROM scalars WHERE series_id = l.lr_series AND superseded = 0) WHERE falls) AS fall_step
  FROM lr_span l
), lr_shape AS MATERIALIZED (
  SELECT lr.*,
         (SELECT value FROM scalars WHERE series_id = lr.lr_series AND superseded = 0 AND step < lr.fall_step
            ORDER BY step DESC LIMIT 1) AS lr_top,
         (SELECT value FROM scalars WHERE series_id = lr.lr_series AND superseded = 0
            AND step <= (lr.fall_step + lr.last_step) / 2.0 ORDER BY step DESC LIMIT 1) AS lr_mid,
         (SELECT count(*) FROM (SELECT step, value > lag(value) OVER (ORDER BY step) * 1.01 AS rises
            FROM scalars WHERE series_id = lr.lr_series AND superseded = 0)
          WHERE rises AND step > lr.fall_step) AS rises_after_fall
  FROM lr
), shape AS MATERIALIZED (
  -- Where the midway LR lies between the geometric mean of the decay's ends (an exponential
  -- decay passes through it: 0) and their arithmetic mean (a linear one: 1; a cosine, above).
  SELECT s.*,
         CASE WHEN lr_top > lr_last AND lr_last > 0 AND lr_mid > 0
              THEN (ln(lr_mid) - 0.5 * (ln(lr_top) + ln(lr_last)))
                   / (ln(0.5 * (lr_top + lr_last)) - 0.5 * (ln(lr_top) + ln(lr_last))) END AS linearity
  FROM lr_shape s
), judged AS (
  SELECT shape.*,
         CASE WHEN alive = 1 THEN 'its writer (pid in the file name) still runs on this host but has written nothing'
              WHEN planned IS NOT NULL AND last_step < :planned_frac * planned
                THEN 'it stopped at step ' || last_step || ' of a planned ' || CAST(planned AS INTEGER)
              WHEN lr_peak > 0 AND lr_last > :lr_high * lr_peak AND lr_before > 0
                   AND lr_before - lr_last >= :lr_moving * lr_before  -- still decaying
                   AND rises_after_fall = 0 AND COALESCE(linearity, 1) > :geometric_max  -- towards an end
                THEN 'its learning-rate schedule was still decaying (' || printf('%.3g', lr_before) || ' -> ' ||
                     printf('%.3g', lr_last) || ') when it stopped'
         END AS why
  FROM shape
)
SELECT run_id, series_id, last_step AS onset_step, last_step AS first_step, last_step,
       run || ': nothing new for ' || printf('%.0f', (:now - last_wall) / 60.0) || ' min (last point: ' || tag ||
         ' at step ' || last_step || ', logged every ' || printf('%.3g', med_gap) || ' s before), and ' || why ||
         CASE WHEN alive = 1 THEN ': hung' ELSE ': it did not finish' END AS message,
       json_object('last_wall_time', last_wall, 'silent_seconds', :now - last_wall, 'median_gap', med_gap,
                   'p99_gap', p99_gap, 'last_step', last_step, 'writer_alive', alive, 'planned_steps', planned,
                   'lr_last', lr_last, 'lr_peak', lr_peak) AS evidence
FROM judged WHERE why IS NOT NULL

-- id: loss_oscillation
-- title: Loss swings widely without converging
-- severity: warning
-- roles: train_loss
-- inhibited_by: non_finite_loss, loss_divergence, epoch_boundary_jumps, stale_run
-- (Not by loss_spikes: spikes that recur with a regular period, as at each peak of a cyclic LR,
-- are an oscillation, and the period test here says so; the two findings then stand together.)
-- cause: The learning rate is too high for the loss surface (the optimizer bounces across a
--   valley instead of descending it), or the batch is too small for this learning rate.
--   A validation loss that swings between evaluations: the validation set is too small to
--   measure it (a handful of examples, so each one flips the mean), or the model's predictions
--   swing with the updates (the same learning-rate cause).
-- fix: Halve the learning rate (or use a decay schedule), double the batch size, or both; with
--   Adam, a lower beta2 (0.95) damps swings in non-stationary phases. For a swinging
--   validation loss, first count the validation examples (hundreds at least) and check that
--   evaluation runs in eval mode on the same set each time.
-- param tail_frac = 0.5: the most recent part of the run examined
-- param smooth = 5: points in the rolling median that removes step-to-step noise
-- param min_ratio = 2: the smoothed curve's 90th over 10th percentile, at least
-- param min_crossings = 4: times the smoothed curve crosses its median, at least
-- param trend_z = 3: no decreasing trend: Mann–Kendall z above -trend_z (swings are autocorrelated,
--   which inflates z: a few periods cut mid-swing read as a trend of about 2.5)
-- param min_points = 60: points in the examined part
-- param max_period = 32: the longest period, in points, looked for (a swing of 4-32 points, as a
--   cyclic LR or data sources served in blocks make; longer ones the smoothed reading sees)
-- param period_min_ratio = 1.5: a regular period's swing around the trend (10th to 90th
--   percentile, unsmoothed) needs only this: the period, which noise does not have, is the evidence
-- param period_strength = 0.6: a swing with a period (up to max_period points) is read
--   unsmoothed (a 5-point median flattens a period of 4, and shrinks a sawtooth of 16) when it is this
--   regular (autocorrelation of the differences at its period) ...
-- param period_z = 4: ... or when that autocorrelation is this many standard errors (1/sqrt(n))
--   above zero, beyond chance over the lags searched, and a shorter lag is at least
--   trough_z standard errors below zero (the curve turns around within the period, which a
--   merely smooth curve, positive at every short lag, does not): a long curve whose period is
--   clear though each cycle differs, as a cyclic LR's
-- param trough_z = 2: (see period_z)
-- param period_min_strength = 0.3: ... and the autocorrelation is at least this: over a few
--   hundred points, momentum's faint ringing in a small batch's noise (0.2 at some lag among
--   the 30 searched, with the -0.5 at lag 1 that differencing noise always gives) clears
--   period_z; a swing the eye sees is 0.4 and more
-- param short_min_points = 16: ... and then this many points in the examined part are enough
--   (short runs: an epoch per point)
-- param val_min_points = 10: evaluations a validation loss needs before its swings are judged
-- param serial_z = 3: and what the curve does around its trend in the examined part must be
--   more than independent noise: Bartels' rank von Neumann test |z| at least this (positive
--   when neighbours are alike, as in a swing; negative when they alternate, a period of 2-3)
--
-- Noise is not oscillation: the short rolling median shrinks step-to-step noise, so what is
-- left spread over a 2x range, repeatedly crossing its own level, is swinging. But a small
-- batch's loss is noisy enough to leave that much after a 5-point median; its points are
-- independent samples, though, and swings are not: successive values of a swing are alike
-- (or alternate), which the rank von Neumann test sees and noise of any size does not
-- produce. A regular short period may ride on a descent (a cyclic LR whose peaks are too
-- high: the loss jumps at every peak while it trends down): then the swings are measured
-- around the trend line, and the period, not a flat level, is the evidence.
-- A validation loss is read too, unsmoothed and without the noise test: each evaluation
-- averages the same held-out set, so it has no minibatch noise to smooth away, and one that
-- jumps 2x up and down between evaluations, with no trend either way (a descent is learning,
-- a rise is overfitting), is swinging. Only when the training loss does not swing itself.
WITH span AS (
  SELECT min(step) AS lo, max(step) AS hi FROM role_points WHERE run_id = :run_id AND role = 'train_loss'
), per AS MATERIALIZED (
  -- A short, regular period (2 to 2 x smooth points) over the whole curve (a short run's tail
  -- holds too few periods to find one): read it unsmoothed.
  SELECT series_id, CASE WHEN (json_extract(p, '$.strength') >= :period_strength
                                OR json_extract(p, '$.strength') >= :period_min_strength
                                   AND json_extract(p, '$.strength') * sqrt(json_extract(p, '$.n') - 1) >= :period_z
                                   AND json_extract(p, '$.trough') * sqrt(json_extract(p, '$.n') - 1) <= -:trough_z)
                              AND json_extract(p, '$.period_points') BETWEEN 2 AND :max_period
                         THEN 1 ELSE :smooth END AS sm,
         -- A period the curve turns around within (a negative autocorrelation at a shorter
         -- lag); a merely smooth curve has its best lag at 2 and no turn.
         CASE WHEN json_extract(p, '$.trough') < 0 THEN json_extract(p, '$.period_points') END AS period
  FROM (SELECT series_id, tw_period(step, ln(value), 2, :max_period) AS p
        FROM role_points WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0 AND value > 0
        GROUP BY series_id)
), t AS MATERIALIZED (
  SELECT series_id, tag, per.sm AS sm, per.period AS period, count(*) AS n, min(step) AS first_step, max(step) AS last_step,
         tw_swings(step, value, per.sm) AS j
  FROM role_points JOIN per USING (series_id), span WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
    AND step >= span.hi - :tail_frac * (span.hi - span.lo)
  GROUP BY series_id
), began AS MATERIALIZED (
  -- Where the swinging began: where the curve's deviation from its own rolling median (one
  -- swing period wide) turns from ~0 (a descent) to large; failing that, the first step the
  -- smoothed curve reached its swinging level.
  SELECT t.*, COALESCE(
           -- The period, in points: the regular one found above, else the examined part
           -- crosses its level twice per swing (a sawtooth riding on a trend crosses more often).
           (SELECT tw_swing_onset(p.step, p.value, t.sm,
                                  CASE WHEN t.sm = 1 AND t.period > 0 THEN t.period
                                       ELSE 2.0 * t.n / max(1, json_extract(t.j, '$.crossings')) END)
              FROM role_points p
              WHERE p.run_id = :run_id AND p.series_id = t.series_id AND p.value_class = 0),
           (SELECT tw_first_below(p.step, p.value, json_extract(t.j, '$.level'), max(5, t.n / 25))
              FROM role_points p WHERE p.run_id = :run_id AND p.series_id = t.series_id
              AND p.value_class = 0)) AS since
  FROM t
), wide AS MATERIALIZED (
  -- Swinging that began before the examined part is judged from where it began: more swings
  -- to count, whole periods for the trend test.
  SELECT began.*, CASE WHEN since < first_step THEN
           (SELECT tw_swings(p.step, p.value, began.sm) FROM role_points p
              WHERE p.run_id = :run_id AND p.series_id = began.series_id AND p.value_class = 0
              AND p.step >= began.since) ELSE j END AS jw,
         min(first_step, COALESCE(since, first_step)) AS from_step,
         -- The swing range needed: lower for a regular period the curve turns around within.
         CASE WHEN sm = 1 AND period > 0 THEN :period_min_ratio ELSE :min_ratio END AS bar
  FROM began
), judged AS (
  -- Swinging in the examined part, or from where the swinging began (the crossings of a
  -- stretch's own level depend on where it is cut: either reading is enough).
  -- Either way, the curve must show structure, not independent noise: serial dependence in
  -- the examined part, or the regular period found above (a period of 4 is invisible to a
  -- lag-1 test: neighbours a quarter swing apart are uncorrelated).
  SELECT wide.*, abs(json_extract(j, '$.serial_z')) >= :serial_z OR sm = 1 AS structured,
         (json_extract(j, '$.log') = 1 AND json_extract(j, '$.ratio') >= bar
            AND json_extract(j, '$.crossings') >= :min_crossings AND json_extract(j, '$.mk_z') > -:trend_z) AS tail_swings,
         (json_extract(jw, '$.log') = 1 AND json_extract(jw, '$.ratio') >= bar
            AND json_extract(jw, '$.crossings') >= :min_crossings AND json_extract(jw, '$.mk_z') > -:trend_z) AS wide_swings,
         -- A regular period riding on a trend: its swings around the trend line.
         (sm = 1 AND json_extract(jw, '$.log') = 1 AND json_extract(jw, '$.trend_ratio') >= bar
            AND json_extract(jw, '$.trend_crossings') >= :min_crossings) AS trend_swings
  FROM wide
), chosen AS (
  SELECT series_id, tag, n, sm, bar, since, first_step, last_step, j,
         structured AND (tail_swings OR wide_swings OR trend_swings) AS swinging,
         NOT (tail_swings OR wide_swings) AS on_trend,
         CASE WHEN wide_swings OR trend_swings AND NOT tail_swings THEN jw ELSE j END AS jw,
         CASE WHEN wide_swings OR trend_swings AND NOT tail_swings THEN from_step ELSE first_step END AS from_step
  FROM judged
), val AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, min(step) AS first_step, max(step) AS last_step,
         tw_swings(step, value, 1) AS j
  FROM val_evals WHERE run_id = :run_id AND role = 'val_loss'
  GROUP BY series_id
), val_swinging AS (
  SELECT * FROM val
  WHERE n >= :val_min_points AND json_extract(j, '$.log') = 1 AND json_extract(j, '$.ratio') >= :min_ratio
    AND json_extract(j, '$.crossings') >= :min_crossings AND abs(json_extract(j, '$.mk_z')) < :trend_z
    AND NOT EXISTS (SELECT 1 FROM chosen WHERE swinging)
)
SELECT series_id, first_step AS onset_step, first_step, last_step,
       tag || ' (validation) swings over a ' || printf('%.1f', json_extract(j, '$.ratio')) || 'x range around ' ||
         printf('%.4g', json_extract(j, '$.level')) || ' (10th to 90th percentile of ' || n ||
         ' evaluations), crossing that level ' || json_extract(j, '$.crossings') ||
         ' times with no trend either way (z ' || printf('%.1f', json_extract(j, '$.mk_z')) ||
         '): an evaluation over the same held-out set has no minibatch noise, so the model''s predictions, or a set too small to measure them, swing' AS message,
       json_object('series', tag, 'swing_ratio', json_extract(j, '$.ratio'), 'level', json_extract(j, '$.level'),
                   'crossings', json_extract(j, '$.crossings'), 'trend_z', json_extract(j, '$.mk_z'),
                   'evaluations', n, 'validation', 1) AS evidence
FROM val_swinging
UNION ALL
SELECT series_id,
       -- On a descent, the swinging began with the first jump of a swing's size (half the
       -- range it needs, in log units) above the lowest loss so far.
       CASE WHEN on_trend THEN COALESCE((SELECT min(step) FROM (
              SELECT step, value, min(value) OVER (ORDER BY step ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS low
              FROM role_points p WHERE p.run_id = :run_id AND p.series_id = chosen.series_id
                AND p.value_class = 0 AND p.value > 0)
              WHERE value >= low * sqrt(bar)), since, first_step)
            ELSE COALESCE(since, first_step) END AS onset_step, first_step, last_step,
       CASE WHEN on_trend
         THEN tag || ' swings over a ' || printf('%.1f', json_extract(jw, '$.trend_ratio')) ||
              'x range around its downward trend (10th to 90th percentile, a regular swing too short to smooth), crossing it ' ||
              json_extract(jw, '$.trend_crossings') || ' times since step ' || from_step
         ELSE tag || ' swings over a ' || printf('%.1f', json_extract(jw, '$.ratio')) || 'x range around ' ||
              printf('%.4g', json_extract(jw, '$.level')) || ' (10th to 90th percentile, ' ||
              CASE WHEN sm > 1 THEN 'smoothed over ' || CAST(sm AS INTEGER) || ' points)' ELSE 'a regular swing too short to smooth)' END ||
              ', crossing that level ' || json_extract(jw, '$.crossings') || ' times since step ' || from_step ||
              ', without a downward trend (z ' || printf('%.1f', json_extract(jw, '$.mk_z')) || ')' END ||
         CASE WHEN abs(json_extract(j, '$.serial_z')) >= :serial_z
              THEN '; successive values ' || CASE WHEN json_extract(j, '$.serial_z') > 0 THEN 'are alike' ELSE 'alternate' END ||
                   ' beyond chance (rank von Neumann z ' || printf('%.1f', json_extract(j, '$.serial_z')) ||
                   '), which noise does not do'
              ELSE '; a regular period, which noise does not have' END AS message,
       json_object('series', tag, 'swing_ratio', json_extract(jw, '$.ratio'), 'level', json_extract(jw, '$.level'),
                   'crossings', json_extract(jw, '$.crossings'), 'trend_z', json_extract(jw, '$.mk_z'),
                   'around_trend', on_trend, 'trend_swing_ratio', json_extract(jw, '$.trend_ratio'),
                   'serial_z', json_extract(j, '$.serial_z')) AS evidence
FROM chosen
WHERE (n >= :min_points OR sm = 1 AND n >= :short_min_points) AND swinging

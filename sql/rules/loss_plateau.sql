-- id: loss_plateau
-- title: Loss has stopped decreasing
-- severity: warning
-- roles: train_loss
-- inhibited_by: non_finite_loss, loss_divergence, loss_constant, stale_run
-- cause: Flat after a drop: the learning rate is too low (or decayed too early) for further
--   progress, or the model's capacity is reached. Flat from the start: the learning rate is far
--   too low, the data or labels are broken (labels detached from inputs, one class), the loss
--   is wired wrong, or gradients vanish before the first layers.
-- fix: Flat after a drop: raise the LR or use a schedule that decays later; try a larger model.
--   Flat from the start: overfit 32 examples first (the loss must go near zero), check the
--   initial loss against log(classes), check labels and that gradients reach every layer; try
--   an LR 10x higher. Some architectures start flat and then drop (an S-curve): give them twice
--   the flat stretch before deciding.
-- param tail_frac = 0.3: the recent part of the run whose median level defines "flat"
-- param min_points = 100: loss points needed in the run
-- param min_flat_points = 30: points in the flat stretch, at least
-- param min_flat_frac = 0.2: the flat stretch spans at least this fraction of the run
-- param max_progress = 0.015: improvement over the flat stretch (relative, Theil–Sen on log-loss), at most
-- param max_progress_upper = 0.05: and confidently less than this (estimate + 2 standard errors)
-- param min_drop = 0.2: a drop of this much (relative) before the flat part makes it "after a drop"
-- param max_rate_ratio = 0.075: or, after a drop, improving at most this fraction of the drop's
--   pace (upper bound over the flat stretch's length, against the drop's log change over its
--   length), with the estimate itself at most twice max_progress: short noisy runs cannot
--   bound the change below max_progress_upper, but a curve that fell 3x and then moves at a
--   fourteenth of that pace at most is flat by any reading (a power law's last stretch keeps
--   about a fifth of its earlier pace; a real run's steep first steps make the ratio small,
--   hence the cap on the estimate)
-- param stuck_min_points = 150: a run flat from the start is called stuck only after this many points
-- param lr_low = 0.2: quiet when the LR at the flat stretch's start is at most this fraction of its peak
-- param converged_ratio = 0.1: quiet once the loss is down to this fraction of its start: a
--   training loss 10x below where it began has learned what this setup teaches, and flat is
--   how a finished run looks (a converged floor); the plateaus worth a warning are the ones
--   stuck after a small drop (2-5x), or never dropping
-- param max_decel = 0.33: quiet after a drop whose second half (in steps, up to the flat
--   stretch) fell by at most this fraction of its first half (log units): a loss decelerating
--   into its floor (diminishing returns: a power law, an exponential approach) has converged;
--   a steady descent that stopped short (a knee: the second half as steep as the first) is stuck
-- param min_drop_points = 30: points in the drop before the flat stretch, at least, to read
--   its deceleration
-- param lr_low_share = 0.67: or when it is that low over this share of the flat stretch (a
--   schedule that hit its floor early)
--
-- A plateau must be shown, not merely not disproved. The flat stretch runs from where the
-- smoothed curve first reaches the recent level (the median of the last tail_frac) to the end; over it,
-- log-loss must have improved by at most max_progress and, given the noise around the line,
-- surely by less than max_progress_upper. A healthy curve still improving fails the first; a
-- curve too noisy to tell fails the second. Not reported while the LR is low (a schedule
-- annealing, or at its floor: lr_schedule_misaligned speaks for that), nor once the loss has
-- converged to ~0.
WITH span AS MATERIALIZED (
  SELECT min(step) AS lo, max(step) AS hi FROM role_points WHERE run_id = :run_id AND role = 'train_loss'
), pts AS (
  SELECT series_id, tag, step, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0 AND value > 0
), lvl AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, tw_trend(step, ln(value)) AS whole,
         (SELECT tw_median(p.value) FROM pts p, span WHERE p.series_id = pts.series_id
            AND p.step >= span.hi - :tail_frac * (span.hi - span.lo)) AS level
  FROM pts GROUP BY series_id
), since AS MATERIALIZED (
  -- Where the curve, smoothed over about 2% of its points, first reaches that level: noise
  -- alone does not put the plateau's start inside the drop before it.
  SELECT lvl.*, (SELECT tw_first_below(p.step, p.value, lvl.level, max(5, lvl.n / 50)) FROM pts p
                   WHERE p.series_id = lvl.series_id) AS since
  FROM lvl
), flat AS MATERIALIZED (
  SELECT since.*, (SELECT tw_trend(p.step, ln(p.value)) FROM pts p WHERE p.series_id = since.series_id
                     AND p.step >= since.since) AS t
  FROM since
), lr AS (
  SELECT max(value) AS hi FROM role_points WHERE run_id = :run_id AND role = 'lr' AND value_class = 0
), v AS MATERIALIZED (
  SELECT flat.*,
         -- Where the loss started: its first logged value (the loss at initialisation), or
         -- the trend line's start where that is higher. The line alone misses a drop made in
         -- the first few steps (a fast start, then diminishing returns).
         max(exp(json_extract(whole, '$.start')),
             (SELECT value FROM pts p WHERE p.series_id = flat.series_id ORDER BY step LIMIT 1)) AS initial,
         -- The LR where the flat stretch begins (NULL without an lr series).
         (SELECT value FROM role_points WHERE run_id = :run_id AND role = 'lr' AND value_class = 0
            AND step >= flat.since ORDER BY step LIMIT 1) AS lr_then, lr.hi AS lr_peak,
         (SELECT avg(value <= :lr_low * lr.hi) FROM role_points WHERE run_id = :run_id AND role = 'lr'
            AND value_class = 0 AND step >= flat.since) AS lr_low_frac,
         -json_extract(t, '$.change') AS progress,                    -- log units ~ relative
         -json_extract(t, '$.change') + 2 * json_extract(t, '$.change_se') AS progress_hi,
         json_extract(t, '$.n') AS flat_n, json_extract(whole, '$.last_step') AS last_step,
         1.0 * (span.hi - flat.since) / max(1, span.hi - span.lo) AS flat_frac,
         span.lo AS lo, span.hi AS hi
  FROM flat, lr, span
), mid AS MATERIALIZED (
  -- The level halfway (in steps) through the descent before the flat stretch: the median of
  -- the tenth of its points nearest that step (three at least).
  SELECT v.*, (SELECT tw_median(value) FROM (
                 SELECT value, row_number() OVER (ORDER BY abs(p.step - (v.lo + v.since) / 2.0)) AS r,
                        count(*) OVER () AS c
                 FROM pts p WHERE p.series_id = v.series_id AND p.step BETWEEN v.lo AND v.since)
               WHERE r <= max(3, c / 10)) AS mid_level,
         (SELECT count(*) FROM pts p WHERE p.series_id = v.series_id AND p.step < v.since) AS drop_n
  FROM v
), paced AS MATERIALIZED (
  SELECT mid.*, initial > 0 AND level <= (1 - :min_drop) * initial AS after_drop,
         -- The descent's second half against its first (log drops): ~1 for a steady descent
         -- that stopped short (a knee), ~0 for diminishing returns, which is how a loss
         -- approaching its floor looks (converged, not stuck).
         CASE WHEN initial > mid_level AND mid_level > 0 AND level > 0
              THEN ln(mid_level / level) / ln(initial / mid_level) END AS decel,
         -- The flat stretch's pace (upper bound, per step) over the drop's (per step).
         CASE WHEN since > lo AND hi > since AND initial > level AND level > 0
              THEN (progress_hi / (hi - since)) / (ln(initial / level) / (since - lo)) END AS rate_ratio
  FROM mid
), found AS (
  SELECT * FROM paced
  WHERE n >= :min_points AND flat_n >= :min_flat_points AND flat_frac >= :min_flat_frac
    -- A schedule annealing (or sitting at its floor) flattens the loss by design. (COALESCE: a
    -- run that logs no LR has NULLs here, and NOT NULL would drop it.)
    AND NOT COALESCE(lr_peak > 0 AND (lr_then <= :lr_low * lr_peak OR lr_low_frac >= :lr_low_share), 0)
    AND ((progress <= :max_progress AND progress_hi < :max_progress_upper)
         OR (after_drop AND progress <= 2 * :max_progress AND rate_ratio <= :max_rate_ratio))
    -- Surely and clearly worse is no plateau (a noisy flat stretch may read a few % worse).
    AND NOT (progress_hi < 0 AND progress < -:max_progress_upper)
    AND level > :converged_ratio * initial                    -- converged to ~0 is done, not stuck
    -- After a drop with diminishing returns, flat is the floor the curve was approaching.
    -- (A drop over a handful of points shows no such shape: a loss that fell in its first
    -- few steps and not at all in the long rest learned its output bias, not the task.)
    AND NOT COALESCE(after_drop AND drop_n >= :min_drop_points AND decel <= :max_decel, 0)
)
-- Flat from the start began at the start; flat after a drop, where the drop ended.
SELECT series_id, CASE WHEN after_drop THEN since ELSE lo END AS onset_step, since AS first_step, last_step,
       CASE WHEN after_drop
         THEN tag || ' has been flat at about ' || printf('%.4g', level) || ' since step ' || since ||
              ' (' || printf('%.0f', 100 * flat_frac) || '% of the run) after dropping from ' ||
              printf('%.4g', initial) || ': it changed ' || printf('%+.1f', -100 * progress) ||
              '% over that stretch (at most ' || printf('%.1f', 100 * progress_hi) || '% better, given its noise' ||
              CASE WHEN rate_ratio < 1 THEN ': at most ' || printf('%.0f', 100 * max(rate_ratio, 0.01)) ||
                   '% of the pace of its drop' ELSE '' END || ')'
         ELSE tag || ' has stayed near its initial level ' || printf('%.4g', initial) || ' for all ' || n ||
              ' points (now ' || printf('%.4g', level) || ', ' || printf('%+.0f', 100 * (level / initial - 1)) ||
              '%; flat within ' || printf('%.1f', 100 * max(abs(progress), progress_hi)) ||
              '% since step ' || since || '): the model is not learning' END AS message,
       json_object('series', tag, 'initial', initial, 'level', level, 'progress', progress,
                   'progress_upper', progress_hi, 'since_step', since, 'flat_fraction', flat_frac,
                   'points', n, 'pace_vs_drop', rate_ratio, 'deceleration', decel, 'kind', CASE WHEN after_drop THEN 'after_drop' ELSE 'stuck' END) AS evidence
FROM found
WHERE after_drop OR n >= :stuck_min_points

-- id: loss_plateau
-- title: Loss has stopped decreasing
-- severity: warning
-- roles: train_loss
-- inhibited_by: non_finite_loss, loss_divergence, loss_constant
-- cause: Flat after a drop: the learning rate is too low (or decayed too early) for further
--   progress, or the model's capacity is reached. Flat from the start: the learning rate is far
--   too low, the data or labels are broken (labels detached from inputs, one class), the loss
--   is wired wrong, or gradients vanish before the first layers.
-- fix: Flat after a drop: raise the LR or use a schedule that decays later; try a larger model.
--   Flat from the start: overfit 32 examples first (the loss must go near zero), check the
--   initial loss against log(classes), check labels and that gradients reach every layer; try
--   an LR 10x higher. Some architectures start flat and then drop (an S-curve): give them twice
--   the flat stretch before deciding.
-- param tail_frac = 0.3: the most recent part of the run examined for progress
-- param min_points = 100: loss points needed
-- param trend_z = 2.5: no decreasing trend in the recent part: Mann–Kendall z above -trend_z
-- param min_drop = 0.2: a drop of this much (relative) before the flat part makes it "after a drop"
-- param stuck_min_points = 300: a run flat from the start is called stuck only after this many points
--
-- Progress is judged by a trend test in units of the run's own noise, not by a fixed delta:
-- a curve still improving slowly has a significant downward trend; a plateau has none. Not
-- reported while the LR is at its floor (lr_schedule_misaligned speaks for that).
WITH span AS (
  SELECT min(step) AS lo, max(step) AS hi FROM role_points WHERE run_id = :run_id AND role = 'train_loss'
), pts AS (
  SELECT series_id, tag, step, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
), agg AS (
  SELECT series_id, tag, count(*) AS n, tw_trend(step, value) AS whole,
         (SELECT tw_trend(p.step, p.value) FROM pts p, span WHERE p.series_id = pts.series_id
            AND p.step >= span.hi - :tail_frac * (span.hi - span.lo)) AS tail,
         -- Where the plateau began: the first point at or below its level (the tail's median).
         (SELECT min(p.step) FROM pts p WHERE p.series_id = pts.series_id AND p.value <=
            (SELECT tw_median(q.value) FROM pts q, span WHERE q.series_id = pts.series_id
               AND q.step >= span.hi - :tail_frac * (span.hi - span.lo))) AS since
  FROM pts GROUP BY series_id
), lr AS (
  SELECT min(value) AS lo, max(value) AS hi,
         (SELECT value FROM role_points WHERE run_id = :run_id AND role = 'lr' AND value_class = 0
            ORDER BY step DESC LIMIT 1) AS last
  FROM role_points WHERE run_id = :run_id AND role = 'lr' AND value_class = 0
), v AS (
  SELECT agg.*, json_extract(whole, '$.start') AS initial, json_extract(tail, '$.start') AS tail_start,
         json_extract(tail, '$.end') AS level, json_extract(tail, '$.mk_z') AS tail_z,
         json_extract(tail, '$.n') AS tail_n, json_extract(whole, '$.mk_z') AS whole_z,
         json_extract(tail, '$.first_step') AS tail_first, json_extract(whole, '$.last_step') AS last_step
  FROM agg, lr
  WHERE NOT (lr.hi > 0 AND lr.lo < 0.5 * lr.hi AND lr.last <= 1.05 * lr.lo)  -- LR at its floor
)
SELECT series_id, COALESCE(since, tail_first) AS onset_step, COALESCE(since, tail_first) AS first_step, last_step,
       CASE WHEN initial > 0 AND level <= (1 - :min_drop) * initial
         THEN tag || ' has been flat at about ' || printf('%.4g', level) || ' since step ' || COALESCE(since, tail_first) ||
              ' after dropping from ' || printf('%.4g', initial) || ': no downward trend over the last ' ||
              printf('%.0f', 100 * :tail_frac) || '% of the run (trend z ' || printf('%.1f', tail_z) || ')'
         ELSE tag || ' has not moved from its initial level ' || printf('%.4g', initial) || ' in ' || n ||
              ' points (now ' || printf('%.4g', level) || ', trend z ' || printf('%.1f', whole_z) ||
              '): the model is not learning' END AS message,
       json_object('series', tag, 'initial', initial, 'level', level, 'tail_trend_z', tail_z,
                   'whole_trend_z', whole_z, 'since_step', since, 'points', n,
                   'kind', CASE WHEN initial > 0 AND level <= (1 - :min_drop) * initial THEN 'after_drop' ELSE 'stuck' END) AS evidence
FROM v
WHERE n >= :min_points AND tail_n >= :min_points / 4 AND tail_z > -:trend_z
  AND level > 1e-3 * initial                                  -- converged to ~0 is done, not stuck
  AND (level <= (1 - :min_drop) * initial OR (whole_z > -:trend_z AND n >= :stuck_min_points))

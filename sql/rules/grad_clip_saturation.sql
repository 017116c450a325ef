-- id: grad_clip_saturation
-- title: Gradient clipping is active on almost every step (or on none)
-- severity: warning
-- roles: grad_norm
-- cause: The clip threshold is far below the gradients' natural size: every update is
--   rescaled, which silently turns the optimizer into normalized-gradient descent with a
--   different effective learning rate.
-- fix: Raise max_grad_norm to just above the typical pre-clip norm (its median here), or lower
--   the learning rate deliberately; clipping should catch outliers (a few % of steps), not all.
-- param recent = 300: most recent gradient-norm points considered
-- param max_share = 0.5: share of those above the threshold, at least
-- param min_points = 20: points needed
-- param adaptive_ratio = 10: with an adaptive optimizer, a warning only when the median is this
--   many times the threshold (pre-clip norms far above it: the LR or the init is off)
-- param idle_ratio = 0.2: clipping never active (information): every pre-clip norm of the run
--   below the threshold, and their median at most this share of it
-- param idle_points = 100: points the run needs for that, at least (its early, largest
--   gradients included)
--
-- The threshold comes from the run's hyperparameters (max_grad_norm, gradient_clip_val,
-- clip_grad_norm, grad_clip) or a clip_threshold series.
--
-- How much a clip that is always active matters depends on the optimizer. SGD's step is the
-- gradient times the LR, so a gradient clipped to a third is a third of the LR the user set.
-- Adam, AdamW, RMSprop, Adagrad, Adafactor, LAMB and Lion divide by the gradients' own running
-- scale (or take its sign), so a gradient rescaled by about the same factor every step moves
-- the weights about as far: with them (named in the hyperparameters, as HF's `optim` does)
-- saturation is info unless the pre-clip norm is far above the threshold.
--
-- The other side, from the same threshold: a clip that never acted, not even on the early,
-- largest gradients, with the norm typically far below it, does nothing. That is harmless
-- while training is stable (information, never a warning), but it says two things: the clip
-- will not save the run from a spike unless it is brought down to a few times the typical
-- norm, and the gradients leave room for a higher learning rate if training is slow.
WITH family AS MATERIALIZED (
  -- The runs whose hyperparameters are this run's (itself, its child runs, ...).
  SELECT member AS run_id FROM run_family WHERE run_id = :run_id
), th AS MATERIALIZED (
  SELECT COALESCE(
    (SELECT h.value_num FROM hparams h WHERE h.run_id IN (SELECT run_id FROM family)
       AND h.value_type = 'number' AND lower(h.key) IN ('max_grad_norm', 'gradient_clip_val', 'clip_grad_norm',
                                                      'grad_clip', 'clip_norm', 'max_norm', 'clip_threshold')
       AND h.value_num > 0 LIMIT 1),
    (SELECT value FROM role_points WHERE run_id = :run_id AND role = 'clip_threshold' AND value_class = 0
       ORDER BY step DESC LIMIT 1)) AS t
), optimizer AS MATERIALIZED (
  -- The optimizer the hparams name, and whether it is adaptive (scales by the gradients' size).
  SELECT name, lower(name) GLOB '*adam*' OR lower(name) GLOB '*rmsprop*' OR lower(name) GLOB '*adagrad*'
           OR lower(name) GLOB '*adadelta*' OR lower(name) GLOB '*adafactor*' OR lower(name) GLOB '*lamb*'
           OR lower(name) GLOB '*lion*' OR lower(name) GLOB '*sophia*' AS adaptive
  FROM (SELECT (SELECT h.value_text FROM hparams h WHERE h.run_id IN (SELECT run_id FROM family)
                  AND h.value_type = 'string' AND lower(h.key) IN ('optim', 'optimizer', 'optimizer_name', 'optimizer_type',
                                                                 'optimizer.name', 'optimizer/name', 'opt', 'optim_name')
                LIMIT 1) AS name)
), g AS (
  SELECT series_id, tag, step, value, row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k
  FROM role_points WHERE run_id = :run_id AND role = 'grad_norm' AND value_class = 0
), agg AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, sum(value > th.t) AS above, tw_median(value) AS med, th.t AS t,
         min(step) AS first_step, max(step) AS last_step
  FROM g, th WHERE k <= :recent AND th.t IS NOT NULL GROUP BY series_id
), onset AS MATERIALIZED (
  -- Saturation began at the earliest step from which on at least max_share of the points are
  -- above the threshold (running shares counted from the end).
  SELECT agg.*, (SELECT min(step) FROM (
      SELECT step, value > agg.t AS above,
             sum(value > agg.t) OVER (ORDER BY step DESC) AS above_after,
             row_number() OVER (ORDER BY step DESC) AS n_after
      FROM g WHERE g.series_id = agg.series_id) x
    WHERE above AND 1.0 * above_after / n_after >= :max_share) AS since
  FROM agg
), judged AS (
  -- Under an adaptive optimizer, a clip only a few times below the norms changes little.
  SELECT onset.*, optimizer.name AS optimizer, COALESCE(optimizer.adaptive AND med < :adaptive_ratio * t, 0) AS mild
  FROM onset, optimizer
)
SELECT series_id, COALESCE(since, first_step) AS onset_step, first_step, last_step,
       CASE WHEN mild THEN 'info' ELSE 'warning' END AS severity,
       tag || ' (before clipping) was above the clip threshold ' || printf('%.3g', t) || ' at ' || above ||
         ' of the last ' || n || ' logged steps (' || printf('%.0f', 100.0 * above / n) ||
         '%); its median is ' || printf('%.3g', med) || ', ' || printf('%.0f', med / t) || 'x the threshold' ||
         CASE WHEN mild
              THEN '; with ' || optimizer || ', which scales each update by the gradients'' own running size, '
                   || 'a gradient clipped by about the same factor every step changes little' ELSE '' END AS message,
       json_object('series', tag, 'threshold', t, 'share_above', 1.0 * above / n, 'median', med,
                   'points', n, 'optimizer', optimizer) AS evidence,
       NULL AS cause, NULL AS fix
FROM judged WHERE n >= :min_points AND 1.0 * above / n >= :max_share
UNION ALL
SELECT series_id, first_step, first_step, last_step, 'info',
       tag || ' (before clipping) stayed below the clip threshold ' || printf('%.3g', t) || ' at all ' || n ||
         ' logged steps: its largest was ' || printf('%.3g', hi) || ' and its median ' || printf('%.3g', med) ||
         ' (' || printf('%.2g', med / t) || 'x the threshold), so clipping never acted',
       json_object('series', tag, 'threshold', t, 'max', hi, 'median', med, 'points', n, 'never_clipped', 1),
       'The clip threshold is far above the gradients this run has: clip_grad_norm_ never rescaled an update, ' ||
         'not even the early, largest ones, so it is no protection at this setting (a value copied from a ' ||
         'recipe for another model or batch size).',
       'Nothing to do while training is stable. To make the clip a guard against spikes, set max_grad_norm to ' ||
         'a few times the typical pre-clip norm (its median here); if training is slow, the small gradients ' ||
         'leave room for a higher learning rate.'
FROM (SELECT g.series_id, g.tag, count(*) AS n, max(g.value) AS hi, tw_median(g.value) AS med, th.t AS t,
             min(g.step) AS first_step, max(g.step) AS last_step
      FROM g, th WHERE th.t IS NOT NULL GROUP BY g.series_id)
WHERE n >= :idle_points AND hi < t AND med <= :idle_ratio * t
UNION ALL
-- fairseq logs the clipping itself: `clip` is the percentage of the interval's updates that were
-- clipped (0-100). Read as a percentage only when it is one (values above 1: a clip threshold of
-- 1 named `clip` is not a share of 100%).
SELECT series_id, first_step, first_step, last_step, 'warning',
       tag || ' (the share of updates whose gradient was clipped) has a median of ' || printf('%.0f', 100 * share) ||
         '% over the last ' || n || ' logged intervals: nearly every update is rescaled by the clip',
       json_object('series', tag, 'share_clipped', share, 'points', n), NULL, NULL
FROM (SELECT series_id, tag, count(*) AS n, min(step) AS first_step, max(step) AS last_step,
             tw_median(value) / 100.0 AS share, max(value) AS hi
      FROM (SELECT series_id, tag, step, value, row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k
            FROM role_points WHERE run_id = :run_id AND role = 'clip_fraction' AND value_class = 0)
      WHERE k <= :recent GROUP BY series_id)
WHERE n >= :min_points AND hi > 1 AND hi <= 100 AND share >= :max_share

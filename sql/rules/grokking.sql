-- id: grokking
-- title: Delayed generalization (grokking)
-- severity: info
-- roles: val_loss, train_loss
-- cause: Not a problem: the model fit the training set long ago, then, with weight decay pulling
--   toward simpler solutions, generalized. Validation was flat for a long stretch, then dropped.
-- fix: Nothing to fix. Do not stop such runs on validation patience alone; if this is the
--   behaviour you want sooner, stronger weight decay usually shortens the plateau.
-- param flat_frac = 0.3: validation flat for at least this fraction of the run before the drop
-- param drop = 0.5: validation fell to at most this fraction of its plateau level
-- param flat_z = 3: Mann–Kendall z on the plateau, in absolute value, at most (flat)
-- param train_frac = 0.2: training loss on the plateau, as a fraction of its initial level, at most
WITH val AS (
  SELECT series_id, tag, step, value FROM role_points WHERE run_id = :run_id AND role = 'val_loss' AND value_class = 0
), span AS (SELECT series_id, min(step) AS lo, max(step) AS hi, min(value) AS best FROM val GROUP BY series_id),
plateau AS (
  -- The plateau level: validation's median over the first part of the run (after 5%).
  SELECT span.*, (SELECT tw_median(v.value) FROM val v WHERE v.series_id = span.series_id
                    AND v.step BETWEEN span.lo + 0.05 * (span.hi - span.lo) AND span.lo + 0.3 * (span.hi - span.lo)) AS level
  FROM span
), dropped AS (
  SELECT plateau.*, (SELECT min(v.step) FROM val v WHERE v.series_id = plateau.series_id
                       AND v.step > plateau.lo + 0.05 * (plateau.hi - plateau.lo)
                       AND v.value < (plateau.level + plateau.best) / 2) AS drop_step
  FROM plateau WHERE best <= :drop * level
), judged AS (
  SELECT d.*, (SELECT tag FROM val WHERE series_id = d.series_id LIMIT 1) AS tag,
         (SELECT json_extract(tw_trend(v.step, v.value), '$.mk_z') FROM val v WHERE v.series_id = d.series_id
            AND v.step BETWEEN d.lo + 0.05 * (d.hi - d.lo) AND d.drop_step) AS flat_z,
         (SELECT tw_median(p.value) FROM role_points p WHERE p.run_id = :run_id AND p.role = 'train_loss'
            AND p.value_class = 0 AND p.step BETWEEN d.lo + 0.5 * (d.drop_step - d.lo) AND d.drop_step) AS train_on_plateau,
         (SELECT json_extract(tw_trend(p.step, p.value), '$.start') FROM role_points p WHERE p.run_id = :run_id
            AND p.role = 'train_loss' AND p.value_class = 0) AS train_initial
  FROM dropped d WHERE drop_step IS NOT NULL
)
SELECT series_id,
       -- The drop's onset: the last evaluation still within 10% of the plateau before it.
       COALESCE((SELECT max(v.step) FROM val v WHERE v.series_id = judged.series_id AND v.step < drop_step
                   AND v.value >= 0.9 * level), drop_step) AS onset_step,
       lo AS first_step, hi AS last_step,
       tag || ' sat near ' || printf('%.4g', level) || ' until step ' || drop_step || ' (' ||
         printf('%.0f', 100.0 * (drop_step - lo) / (hi - lo)) || '% of the run) while training loss was already ' ||
         printf('%.3g', train_on_plateau) || ', then fell to ' || printf('%.4g', best) ||
         ': delayed generalization, not a problem' AS message,
       json_object('series', tag, 'plateau_level', level, 'drop_step', drop_step, 'best', best,
                   'plateau_trend_z', flat_z, 'train_on_plateau', train_on_plateau) AS evidence
FROM judged
WHERE hi > lo AND 1.0 * (drop_step - lo) / (hi - lo) >= :flat_frac AND abs(flat_z) <= :flat_z
  AND train_initial > 0 AND train_on_plateau <= :train_frac * train_initial

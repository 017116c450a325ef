-- id: grokking
-- title: Delayed generalization (grokking)
-- severity: info
-- roles: train_loss
-- roles_any: val_loss, val_acc
-- cause: Not a problem: the model fit the training set long ago, then, with weight decay pulling
--   toward simpler solutions, generalized. Validation did not improve (or even rose) for a long
--   stretch, then dropped.
-- fix: Nothing to fix. Do not stop such runs on validation patience alone; if this is the
--   behaviour you want sooner, stronger weight decay usually shortens the plateau.
-- param flat_frac = 0.3: validation flat for at least this fraction of the run before the drop
-- param drop = 0.5: validation fell to at most this fraction of its plateau level
-- param flat_z = 3: Mann–Kendall z on the plateau above -flat_z: not improving (it may even rise)
-- param train_frac = 0.2: training loss on the plateau, as a fraction of its initial level, at most
-- param acc_rise = 0.3: the accuracy form: validation accuracy rose by at least this much
--   (absolute) from its plateau, while training accuracy was within 10% of its best
--
-- Two forms: validation loss flat (or rising) then falling to at most half; or validation
-- accuracy stuck low then rising sharply (grokking shows most plainly in accuracy).
WITH acc AS MATERIALIZED (
  -- The accuracy form: validation accuracy's plateau level (5-30% of the run), best, span.
  SELECT series_id, tag, min(step) AS lo, max(step) AS hi, max(value) AS best FROM role_points
  WHERE run_id = :run_id AND role = 'val_acc' AND value_class = 0 GROUP BY series_id
), acc_level AS MATERIALIZED (
  SELECT acc.*, (SELECT tw_median(v.value) FROM scalars v WHERE v.series_id = acc.series_id AND v.superseded = 0
                   AND v.value_class = 0 AND v.step BETWEEN acc.lo + 0.05 * (acc.hi - acc.lo)
                                                        AND acc.lo + 0.3 * (acc.hi - acc.lo)) AS level
  FROM acc
), acc_rise AS MATERIALIZED (
  SELECT l.*, (SELECT min(v.step) FROM scalars v WHERE v.series_id = l.series_id AND v.superseded = 0
                 AND v.value_class = 0 AND v.step > l.lo + 0.05 * (l.hi - l.lo) AND v.value >= (l.level + l.best) / 2) AS rise_step
  FROM acc_level l
), acc_judged AS MATERIALIZED (
  SELECT a.*,
         (SELECT tw_median(p.value) FROM role_points p WHERE p.run_id = :run_id AND p.role = 'train_acc'
            AND p.value_class = 0 AND p.step BETWEEN a.lo + 0.5 * (a.rise_step - a.lo) AND a.rise_step) AS train_acc,
         (SELECT max(p.value) FROM role_points p WHERE p.run_id = :run_id AND p.role = 'train_acc' AND p.value_class = 0) AS train_best
  FROM acc_rise a
), val AS MATERIALIZED (
  SELECT series_id, tag, step, value FROM role_points WHERE run_id = :run_id AND role = 'val_loss' AND value_class = 0
), span AS MATERIALIZED (SELECT series_id, min(step) AS lo, max(step) AS hi, min(value) AS best FROM val GROUP BY series_id),
plateau AS MATERIALIZED (
  -- The plateau level: validation's median over the first part of the run (after 5%).
  SELECT span.*, (SELECT tw_median(v.value) FROM val v WHERE v.series_id = span.series_id
                    AND v.step BETWEEN span.lo + 0.05 * (span.hi - span.lo) AND span.lo + 0.3 * (span.hi - span.lo)) AS level
  FROM span
), dropped AS MATERIALIZED (
  SELECT plateau.*, (SELECT min(v.step) FROM val v WHERE v.series_id = plateau.series_id
                       AND v.step > plateau.lo + 0.05 * (plateau.hi - plateau.lo)
                       AND v.value < (plateau.level + plateau.best) / 2) AS drop_step
  FROM plateau WHERE best <= :drop * level
), onset AS MATERIALIZED (
  -- The drop's onset: where a flat line fitted to the plateau bends into the drop (a hinge fit
  -- up to the drop's midpoint); with too few evaluations for a fit, the last evaluation still
  -- within 10% of the plateau.
  SELECT d.*, COALESCE((SELECT tw_hinge_onset(v.step, -v.value) FROM val v WHERE v.series_id = d.series_id
                          AND v.step <= d.drop_step),
                       (SELECT max(v.step) FROM val v WHERE v.series_id = d.series_id AND v.step < d.drop_step
                          AND v.value >= 0.9 * d.level), d.drop_step) AS onset_step
  FROM dropped d WHERE drop_step IS NOT NULL
), judged AS MATERIALIZED (
  -- Flatness is judged on the plateau alone, before the onset: the first steps of the drop
  -- would read as a downward trend.
  SELECT o.*, (SELECT tag FROM val WHERE series_id = o.series_id LIMIT 1) AS tag,
         (SELECT json_extract(tw_trend(v.step, v.value), '$.mk_z') FROM val v WHERE v.series_id = o.series_id
            AND v.step >= o.lo + 0.05 * (o.hi - o.lo) AND v.step < o.onset_step) AS flat_z,
         (SELECT tw_median(p.value) FROM role_points p WHERE p.run_id = :run_id AND p.role = 'train_loss'
            AND p.value_class = 0 AND p.step BETWEEN o.lo + 0.5 * (o.drop_step - o.lo) AND o.drop_step) AS train_on_plateau,
         (SELECT json_extract(tw_trend(p.step, p.value), '$.start') FROM role_points p WHERE p.run_id = :run_id
            AND p.role = 'train_loss' AND p.value_class = 0) AS train_initial
  FROM onset o
)
SELECT series_id, onset_step,
       lo AS first_step, hi AS last_step, 'info' AS severity,
       tag || ' sat near ' || printf('%.4g', level) || ' until step ' || drop_step || ' (' ||
         printf('%.0f', 100.0 * (drop_step - lo) / (hi - lo)) || '% of the run) while training loss was already ' ||
         printf('%.3g', train_on_plateau) || ', then fell to ' || printf('%.4g', best) ||
         ': delayed generalization, not a problem' AS message,
       json_object('series', tag, 'plateau_level', level, 'drop_step', drop_step, 'best', best,
                   'plateau_trend_z', flat_z, 'train_on_plateau', train_on_plateau) AS evidence,
       NULL AS cause, NULL AS fix
FROM judged
WHERE hi > lo AND 1.0 * (drop_step - lo) / (hi - lo) >= :flat_frac AND flat_z > -:flat_z
  AND train_initial > 0 AND train_on_plateau <= :train_frac * train_initial
UNION ALL
SELECT series_id, rise_step, lo, hi, 'info',
       tag || ' sat near ' || printf('%.3g', level) || ' until step ' || rise_step || ' (' ||
         printf('%.0f', 100.0 * (rise_step - lo) / (hi - lo)) || '% of the run) while training accuracy was already ' ||
         printf('%.3g', train_acc) || ', then rose to ' || printf('%.3g', best) || ': delayed generalization, not a problem',
       json_object('series', tag, 'plateau_level', level, 'rise_step', rise_step, 'best', best, 'train_accuracy', train_acc),
       NULL, NULL
FROM acc_judged
WHERE hi > lo AND rise_step IS NOT NULL AND best - level >= :acc_rise
  AND 1.0 * (rise_step - lo) / (hi - lo) >= :flat_frac AND train_best > 0 AND train_acc >= 0.9 * train_best

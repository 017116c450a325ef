-- id: grad_explosion
-- title: Gradient norm is exploding
-- severity: critical
-- roles: grad_norm
-- inhibited_by: non_finite_loss
-- cause: Training is becoming unstable: the learning rate is too high for the current
--   curvature, there is no (or too loose) gradient clipping, or activations grow without
--   normalization (deep nets without residual scaling, RNNs).
-- fix: Clip gradients (max norm 1.0 is a common start), lower the learning rate, and check for
--   missing normalization; resume from before the growth began if the loss already suffers.
-- param ratio = 8: recent median over the early median, at least
-- param trend_z = 3: Mann–Kendall z over the run, at least
-- param min_points = 30: gradient-norm points needed
-- param recent_frac = 0.1: the recent window, as a fraction of the run
-- param skip_frac = 0.05: the first part is skipped (initial transients)
WITH span AS (
  SELECT min(step) AS lo, max(step) AS hi FROM role_points WHERE run_id = :run_id AND role = 'grad_norm'
), g AS (
  SELECT series_id, tag, step, value FROM role_points, span
  WHERE run_id = :run_id AND role = 'grad_norm' AND value_class = 0 AND value > 0
    AND step >= span.lo + :skip_frac * (span.hi - span.lo)
), agg AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, tw_trend(step, ln(value)) AS j,
         (SELECT tw_median(x.value) FROM g x, span WHERE x.series_id = g.series_id
            AND x.step <= span.lo + (:skip_frac + 0.2) * (span.hi - span.lo)) AS early,
         (SELECT tw_median(x.value) FROM g x, span WHERE x.series_id = g.series_id
            AND x.step >= span.hi - :recent_frac * (span.hi - span.lo)) AS recent,
         min(step) AS first_step, max(step) AS last_step
  FROM g GROUP BY series_id
), onset AS MATERIALIZED (
  -- Where the growth began: a flat-then-rising hinge fitted to the log of the whole series.
  SELECT agg.*, (SELECT tw_hinge_onset(p.step, ln(p.value)) FROM role_points p WHERE p.run_id = :run_id
                   AND p.series_id = agg.series_id AND p.value_class = 0 AND p.value > 0) AS since
  FROM agg
)
SELECT series_id, COALESCE(since, first_step) AS onset_step, first_step, last_step,
       tag || ' grew from about ' || printf('%.3g', early) || ' early in the run to ' || printf('%.3g', recent) ||
         ' recently (' || printf('%.0f', recent / early) || 'x), steadily (trend z ' ||
         printf('%.1f', json_extract(j, '$.mk_z')) || ')' AS message,
       json_object('series', tag, 'early_median', early, 'recent_median', recent, 'ratio', recent / early,
                   'trend_z', json_extract(j, '$.mk_z')) AS evidence
FROM onset WHERE n >= :min_points AND early > 0 AND recent >= :ratio * early AND json_extract(j, '$.mk_z') >= :trend_z

-- id: grad_explosion
-- title: Gradient norm is exploding
-- severity: critical
-- roles_any: grad_norm, grad_norm_layer
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
-- param burst_ratio = 8: a burst: three points in a row at least this many times both the
--   mean of the 20 norms before them and the series' median (per-batch norms are heavy-tailed:
--   one easy batch's tiny norm is no level to measure a burst against)
--
-- Two readings of each gradient norm. Growth: the recent median far above the early one with a
-- steady rise, over the series' finite stretch: a norm that explodes into inf/NaN (the loss
-- follows) is judged on the finite values before, where the explosion shows, and is reported
-- beside the non-finite loss it causes (it says why). Burst: the norm jumps to many times its
-- previous level and stays there for three points in a row, then may settle (a high learning
-- rate with an adaptive optimizer). One spike is not a burst (noisy per-step norms have them),
-- and a norm that starts high and falls (large early gradients) never rose above an earlier level.
-- A burst that settled is a warning (the run survived it); one still going on is critical.
-- The series: the global norm, or where the run logs only per-layer norms, each layer's (so the
-- header names no role: a run with layer norms alone has no grad_norm; without either, the
-- query finds no series and costs nothing).
WITH src AS (
  SELECT DISTINCT series_id FROM run_roles WHERE run_id = :run_id AND
    (role = 'grad_norm' OR (role = 'grad_norm_layer' AND NOT EXISTS (
       SELECT 1 FROM run_roles r WHERE r.run_id = :run_id AND r.role = 'grad_norm')))
), fin AS MATERIALIZED (
  -- One value per step (a norm logged twice at a step is one measurement).
  SELECT p.series_id, p.tag, p.step, max(p.value) AS value FROM role_points p
  WHERE p.run_id = :run_id AND p.role IN ('grad_norm', 'grad_norm_layer') AND p.value_class = 0 AND p.value > 0
    AND p.series_id IN (SELECT series_id FROM src)
  GROUP BY p.series_id, p.step
), span AS MATERIALIZED (
  SELECT series_id, min(step) AS lo, max(step) AS hi, tw_median(value) AS med, max(value) AS top FROM fin GROUP BY series_id
), agg AS MATERIALIZED (
  -- (tw_median skips NULLs: one pass gives the early and the recent median.)
  SELECT series_id, tag, count(*) AS n, tw_trend(step, ln(value)) AS j,
         tw_median(CASE WHEN step <= lo + (:skip_frac + 0.2) * (hi - lo) THEN value END) AS early,
         tw_median(CASE WHEN step >= hi - :recent_frac * (hi - lo) THEN value END) AS recent,
         min(step) AS first_step, max(step) AS last_step
  FROM fin JOIN span USING (series_id) WHERE step >= lo + :skip_frac * (hi - lo)
  GROUP BY series_id
), growth AS MATERIALIZED (
  -- Where the growth began: a flat-then-rising hinge fitted to the log of the finite series.
  SELECT agg.*, (SELECT tw_hinge_onset(f.step, ln(f.value)) FROM fin f WHERE f.series_id = agg.series_id) AS since
  FROM agg WHERE n >= :min_points AND early > 0 AND recent >= :ratio * early AND json_extract(j, '$.mk_z') >= :trend_z
), w AS (
  SELECT series_id, tag, step, value,
         min(value, lead(value, 1) OVER o, lead(value, 2) OVER o) AS low3,
         lead(step, 2) OVER o AS step3,
         avg(value) OVER (PARTITION BY series_id ORDER BY step ROWS BETWEEN 20 PRECEDING AND 1 PRECEDING) AS before
  FROM fin WHERE series_id IN (SELECT series_id FROM span WHERE top >= :burst_ratio * med)  -- (a burst is possible)
  WINDOW o AS (PARTITION BY series_id ORDER BY step)
), burst AS MATERIALIZED (
  SELECT w.series_id, w.tag, min(w.step) AS onset, span.med, span.lo, span.hi,
         (SELECT count(*) FROM fin f WHERE f.series_id = w.series_id) AS n
  FROM w JOIN span USING (series_id)
  WHERE step3 IS NOT NULL AND low3 >= :burst_ratio * before AND low3 >= :burst_ratio * span.med
    AND w.series_id NOT IN (SELECT series_id FROM growth)
  GROUP BY w.series_id
), bursts AS MATERIALIZED (
  SELECT burst.*,
         (SELECT max(f.value) FROM fin f WHERE f.series_id = burst.series_id AND f.step >= burst.onset) AS peak,
         (SELECT f.value FROM fin f WHERE f.series_id = burst.series_id AND f.step < burst.onset
            ORDER BY f.step DESC LIMIT 1) AS prev,
         (SELECT count(*) FROM fin f WHERE f.series_id = burst.series_id AND f.value >= :burst_ratio * burst.med) AS high,
         (SELECT min(low3) FROM w WHERE w.series_id = burst.series_id AND w.step3 = burst.hi) >= :burst_ratio * burst.med AS still
  FROM burst WHERE n >= :min_points
)
SELECT series_id, COALESCE(since, first_step) AS onset_step, first_step, last_step, 'critical' AS severity,
       tag || ' grew from about ' || printf('%.3g', early) || ' early in the run to ' || printf('%.3g', recent) ||
         CASE WHEN last_step < (SELECT max(step) FROM role_points p WHERE p.run_id = :run_id AND p.series_id = growth.series_id)
              THEN ' by step ' || last_step || ', its last finite value (' || printf('%.0fx', recent / early) || ')'
              ELSE ' recently (' || printf('%.0fx', recent / early) || ')' END ||
         ', steadily (trend z ' || printf('%.1f', json_extract(j, '$.mk_z')) || ')' AS message,
       json_object('series', tag, 'kind', 'growth', 'early_median', early, 'recent_median', recent, 'ratio', recent / early,
                   'trend_z', json_extract(j, '$.mk_z')) AS evidence
FROM growth
UNION ALL
SELECT series_id, onset, lo, hi, CASE WHEN still THEN 'critical' ELSE 'warning' END,
       tag || ' burst from ' || printf('%.3g', prev) || ' to ' || printf('%.3g', peak) || ' at step ' || onset ||
         ' and stayed above ' || printf('%.0f', :burst_ratio) || 'x its median ' || printf('%.3g', med) ||
         ' for three points in a row (' || high || ' points that high in all)' ||
         CASE WHEN still THEN ', and is still there' ELSE '; it settled since, but the updates taken during the burst ' ||
              'were many times too large' END AS message,
       json_object('series', tag, 'kind', 'burst', 'before', prev, 'peak', peak, 'median', med,
                   'points_above', high) AS evidence
FROM bursts

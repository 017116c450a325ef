-- id: weight_norm_runaway
-- title: Weight norm grows without bound or collapses
-- severity: warning
-- roles: weight_norm
-- cause: Growing: weight decay too weak (or not applied with Adam: use AdamW), or a feedback
--   loop such as logits pushed to infinity by a saturating softmax. Collapsing: weight decay
--   far too strong for the learning rate, shrinking the model toward zero.
-- fix: Growing: use decoupled weight decay (AdamW, 0.01-0.1), clip gradients, add
--   normalization before softmax/logits. Collapsing: lower weight decay by 10x.
-- param grow = 3: end over start (first and last tenth of the run), at least, to call it growth
-- param shrink = 0.3: end over start, at most, to call it a collapse
-- param trend_z = 4: Mann–Kendall z, in absolute value, at least
-- param min_points = 20: points needed
WITH t AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, tw_trend(step, value) AS j
  FROM role_points WHERE run_id = :run_id AND role = 'weight_norm' AND value_class = 0
  GROUP BY series_id
), v AS (
  SELECT series_id, tag, n, json_extract(j, '$.start') AS start, json_extract(j, '$.end') AS fin,
         json_extract(j, '$.mk_z') AS z, json_extract(j, '$.first_step') AS first_step,
         json_extract(j, '$.last_step') AS last_step
  FROM t WHERE n >= :min_points
), onset AS MATERIALIZED (
  SELECT v.*, (SELECT tw_hinge_onset(p.step, ln(p.value)) FROM role_points p WHERE p.run_id = :run_id
                 AND p.series_id = v.series_id AND p.value_class = 0 AND p.value > 0) AS since
  FROM v
)
SELECT series_id, COALESCE(since, first_step) AS onset_step, first_step, last_step,
       tag || CASE WHEN fin >= :grow * start THEN ' keeps growing' ELSE ' is collapsing' END || ': from ' ||
         printf('%.4g', start) || ' to ' || printf('%.4g', fin) || ' (' || printf('%.2f', fin / start) ||
         'x, trend z ' || printf('%.1f', z) || ')' AS message,
       json_object('series', tag, 'start', start, 'end', fin, 'ratio', fin / start, 'trend_z', z) AS evidence
FROM onset WHERE start > 0 AND ((fin >= :grow * start AND z >= :trend_z) OR (fin <= :shrink * start AND z <= -:trend_z))

-- id: non_finite_loss
-- title: Loss became NaN or Inf
-- severity: critical
-- cause: The learning rate is too high for this model and batch, a numerical operation
--   overflowed (fp16 without loss scaling, log(0), division by a zero norm), or a bad input
--   batch holds NaN/Inf.
-- fix: Resume from the last checkpoint before the first non-finite step with the learning rate
--   10x lower and gradient clipping (max norm 1.0); under fp16 use a loss scaler or bf16; check
--   the batch at that step for NaN/Inf and guard log/division with an epsilon.
-- param grad_min_nonfinite = 3: non-finite gradient norms (with a finite loss) before the masked form fires
--
-- Two forms. The plain one: a loss series (train or validation) holds NaN/Inf; critical while
-- its latest value is non-finite (the run is producing garbage now), a warning when it came
-- back. The masked one: the HF Trainer replaces a NaN loss by the logging window's average
-- (logging_nan_inf_filter), so its training loss looks finite while grad_norm is NaN/Inf
-- (reported whenever the training loss is finite, even when validation is NaN too).
WITH loss AS MATERIALIZED (
  SELECT series_id, tag, role,
         count(*) AS n,
         sum(value_class != 0) AS bad,
         min(CASE WHEN value_class != 0 THEN step END) AS first_bad,
         max(step) AS last_step
  FROM role_points WHERE run_id = :run_id AND role IN ('train_loss', 'val_loss')
  GROUP BY series_id
),
loss_detail AS MATERIALIZED (
  SELECT l.*,
         (SELECT value_class FROM role_points p WHERE p.series_id = l.series_id AND p.run_id = :run_id
           ORDER BY step DESC LIMIT 1) AS last_class,
         (SELECT CASE value_class WHEN 1 THEN 'NaN' WHEN 2 THEN '+Inf' ELSE '-Inf' END
            FROM role_points p WHERE p.series_id = l.series_id AND p.run_id = :run_id
             AND p.step = l.first_bad AND p.value_class != 0 LIMIT 1) AS first_kind,
         (SELECT value FROM role_points p WHERE p.series_id = l.series_id AND p.run_id = :run_id
             AND p.step < l.first_bad AND p.value_class = 0 ORDER BY step DESC LIMIT 1) AS last_finite,
         (SELECT step FROM role_points p WHERE p.series_id = l.series_id AND p.run_id = :run_id
             AND p.step < l.first_bad AND p.value_class = 0 ORDER BY step DESC LIMIT 1) AS last_finite_step
  FROM loss l WHERE bad > 0
),
grad AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, sum(value_class != 0) AS bad,
         min(CASE WHEN value_class != 0 THEN step END) AS first_bad, max(step) AS last_step,
         (SELECT value_class FROM role_points p WHERE p.series_id = g.series_id AND p.run_id = :run_id
           ORDER BY step DESC LIMIT 1) AS last_class
  FROM role_points g WHERE run_id = :run_id AND role = 'grad_norm'
  GROUP BY series_id
)
SELECT series_id,
       CASE WHEN last_class != 0 THEN 'critical' ELSE 'warning' END AS severity,
       first_bad AS onset_step, first_bad AS first_step, last_step,
       tag || ' is ' || first_kind || ' from step ' || first_bad ||
         CASE WHEN last_finite IS NOT NULL
              THEN ' (last finite value ' || printf('%.4g', last_finite) || ' at step ' || last_finite_step || ')'
              ELSE ' (it was never finite)' END ||
         '; ' || bad || ' of ' || n || ' points are non-finite' ||
         CASE WHEN last_class != 0 THEN ', including the latest: the run is no longer learning'
              ELSE '; the latest value is finite again' END AS message,
       json_object('series', tag, 'first_non_finite_step', first_bad, 'first_kind', first_kind,
                   'non_finite_points', bad, 'points', n, 'last_finite_value', last_finite,
                   'last_finite_step', last_finite_step, 'latest_is_non_finite', last_class != 0) AS evidence
FROM loss_detail
UNION ALL
SELECT g.series_id,
       CASE WHEN g.last_class != 0 THEN 'critical' ELSE 'warning' END,
       g.first_bad, g.first_bad, g.last_step,
       g.tag || ' is non-finite at ' || g.bad || ' of ' || g.n || ' logged steps (first at step ' ||
         g.first_bad || ') while the loss stays finite: the HF Trainer and similar loops replace a NaN ' ||
         'loss by an average, so the loss curve hides what the gradients show',
       json_object('series', g.tag, 'first_non_finite_step', g.first_bad, 'non_finite_points', g.bad,
                   'points', g.n, 'latest_is_non_finite', g.last_class != 0, 'masked', 1)
FROM grad g
WHERE (g.bad >= :grad_min_nonfinite OR (g.bad > 0 AND g.last_class != 0))
  AND NOT EXISTS (SELECT 1 FROM loss_detail WHERE role = 'train_loss')

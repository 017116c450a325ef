-- id: loss_constant
-- title: Loss is exactly constant
-- severity: critical
-- roles: train_loss
-- inhibited_by: non_finite_loss
-- cause: Nothing is being trained: the loss is computed from a detached tensor (.detach(),
--   .item() in the graph, torch.no_grad around the forward), the optimizer holds other
--   parameters than the model computing the loss, the learning rate is 0, or the same stale
--   value is logged every step.
-- fix: Check that loss.requires_grad is True and loss.grad_fn is set, that the optimizer was
--   built from model.parameters() of the model in use (after .to(device), not before a re-wrap),
--   that optimizer.step() runs, and that the logged value is the current batch's loss.
-- param min_points = 20: identical values in a row, at least
--
-- Bit-identical values step after step never happen in real training, however flat the curve.
WITH last AS (
  SELECT series_id, tag, step, value,
         row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k
  FROM role_points WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
), tail AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, count(DISTINCT value) AS distinct_values,
         count(DISTINCT step) AS steps, min(step) AS first_step, max(step) AS last_step,
         max(value) AS v
  FROM last WHERE k <= :min_points GROUP BY series_id
)
-- Where the constant stretch began: just after the last point with another value.
, stretch AS (
  SELECT t.*, COALESCE(
           (SELECT min(p.step) FROM role_points p WHERE p.run_id = :run_id AND p.series_id = t.series_id
              AND p.step > (SELECT max(q.step) FROM role_points q WHERE q.run_id = :run_id
                              AND q.series_id = t.series_id AND (q.value_class != 0 OR q.value != t.v))),
           (SELECT min(p.step) FROM role_points p WHERE p.run_id = :run_id AND p.series_id = t.series_id))
           AS since
  FROM tail t WHERE n >= :min_points AND distinct_values = 1 AND steps >= :min_points
)
SELECT series_id, since AS onset_step, since AS first_step, last_step,
       tag || ' is exactly ' || printf('%.7g', v) || ' at every point from step ' || since ||
         ' to ' || last_step || ': bit-identical values do not happen while a model trains' AS message,
       json_object('series', tag, 'value', v, 'points', n, 'first_step', first_step,
                   'since_step', since, 'last_step', last_step) AS evidence
FROM stretch

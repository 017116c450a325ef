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
-- param max_rel_spread = 1e-5: or values this close (max - min over the median's size): the
--   same batch or state re-evaluated with nondeterministic reductions jitters in the sixth digit
--
-- Bit-identical values step after step never happen in real training, however flat the curve;
-- neither do values that agree to five digits: minibatch noise alone moves a loss in the third
-- digit, and a converged full-batch curve still creeps (a warning, not critical: the last digits
-- moved).
WITH last AS (
  SELECT series_id, tag, step, value,
         row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k
  FROM role_points WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
), tail AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, count(DISTINCT value) AS distinct_values,
         count(DISTINCT step) AS steps, min(step) AS first_step, max(step) AS last_step,
         tw_median(value) AS v, max(value) - min(value) AS spread
  FROM last WHERE k <= :min_points GROUP BY series_id
)
-- Where the constant stretch began: just after the last point with another value.
, stretch AS (
  SELECT t.*, COALESCE(
           (SELECT min(p.step) FROM role_points p WHERE p.run_id = :run_id AND p.series_id = t.series_id
              AND p.step > (SELECT max(q.step) FROM role_points q WHERE q.run_id = :run_id
                              AND q.series_id = t.series_id
                              AND (q.value_class != 0 OR abs(q.value - t.v) > :max_rel_spread * abs(t.v)))),
           (SELECT min(p.step) FROM role_points p WHERE p.run_id = :run_id AND p.series_id = t.series_id))
           AS since
  FROM tail t WHERE n >= :min_points AND steps >= :min_points
    AND (distinct_values = 1 OR v != 0 AND spread <= :max_rel_spread * abs(v))
)
SELECT series_id, since AS onset_step, since AS first_step, last_step,
       CASE WHEN distinct_values = 1
         THEN tag || ' is exactly ' || printf('%.7g', v) || ' at every point from step ' || since ||
              ' to ' || last_step || ': bit-identical values do not happen while a model trains'
         ELSE tag || ' stays at ' || printf('%.7g', v) || ' to within ' || printf('%.1e', spread / abs(v)) ||
              ' of itself from step ' || since || ' to ' || last_step ||
              ': minibatch noise alone would move it in the third digit, so the weights are not changing' END AS message,
       CASE WHEN distinct_values = 1 THEN NULL ELSE 'warning' END AS severity,
       json_object('series', tag, 'value', v, 'points', n, 'first_step', first_step,
                   'since_step', since, 'last_step', last_step, 'relative_spread', spread / abs(v)) AS evidence
FROM stretch

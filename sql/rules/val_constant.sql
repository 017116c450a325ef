-- id: val_constant
-- title: Validation metric identical at every evaluation
-- severity: warning
-- roles: val_loss, train_loss
-- cause: Evaluation does not see the model being trained: a stale or frozen copy is evaluated,
--   a checkpoint is loaded before each evaluation, the evaluation set is empty or constant, or
--   the logged value is cached.
-- fix: Evaluate the model object the optimizer updates (not a deepcopy made at start, not a
--   reloaded checkpoint), check the validation loader yields batches, and log the freshly
--   computed value.
-- param min_evals = 3: identical evaluations in a row, at least
WITH v AS (
  SELECT series_id, tag, step, value,
         row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k
  FROM role_points WHERE run_id = :run_id AND role = 'val_loss' AND value_class = 0
), tail AS (
  SELECT series_id, tag, count(*) AS n, count(DISTINCT value) AS d, min(step) AS first_step,
         max(step) AS last_step, max(value) AS val
  FROM v WHERE k <= :min_evals GROUP BY series_id
), train AS (
  SELECT t.*, (SELECT count(DISTINCT p.value) FROM role_points p WHERE p.run_id = :run_id
                 AND p.role = 'train_loss' AND p.value_class = 0
                 AND p.step BETWEEN t.first_step AND t.last_step) AS train_values
  FROM tail t WHERE n >= :min_evals AND d = 1
)
SELECT series_id, first_step AS onset_step, first_step, last_step,
       tag || ' is exactly ' || printf('%.7g', val) || ' at each of the last ' || n ||
         ' evaluations (steps ' || first_step || ' to ' || last_step || ') while the training loss took ' ||
         train_values || ' different values' AS message,
       json_object('series', tag, 'value', val, 'evaluations', n, 'train_values', train_values) AS evidence
FROM train WHERE train_values > 1

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
-- One evaluation per step: a callback registered twice writes each value several times at
-- the same step (Ultralytics), which is not several identical evaluations.
WITH v AS (
  SELECT series_id, tag, step, value,
         row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k
  FROM (SELECT series_id, tag, step, max(value) AS value FROM role_points
        WHERE run_id = :run_id AND role = 'val_loss' AND value_class = 0 GROUP BY series_id, step)
), tail AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, count(DISTINCT value) AS d, min(step) AS first_step,
         max(step) AS last_step, max(value) AS val
  FROM v WHERE k <= :min_evals GROUP BY series_id
), train AS MATERIALIZED (
  SELECT t.*, (SELECT count(DISTINCT p.value) FROM role_points p WHERE p.run_id = :run_id
                 AND p.role = 'train_loss' AND p.value_class = 0
                 AND p.step BETWEEN t.first_step AND t.last_step) AS train_values
  FROM tail t WHERE n >= :min_evals AND d = 1
), stretch AS MATERIALIZED (
  -- Where the identical stretch began: the first evaluation after the last different one.
  SELECT train.*, (SELECT max(w.step) FROM v w WHERE w.series_id = train.series_id AND w.value != train.val) AS last_other,
         (SELECT count(*) FROM v WHERE v.series_id = train.series_id AND v.value = train.val) AS same
  FROM train WHERE train_values > 1
), began AS MATERIALIZED (
  SELECT stretch.*, COALESCE((SELECT min(v.step) FROM v WHERE v.series_id = stretch.series_id AND v.step > stretch.last_other),
                             (SELECT min(v.step) FROM v WHERE v.series_id = stretch.series_id)) AS since
  FROM stretch
)
SELECT series_id, since AS onset_step, since AS first_step, last_step,
       tag || ' is exactly ' || printf('%.7g', val) || ' at every evaluation from step ' || since || ' to ' ||
         last_step || ' (' || same || ' evaluations) while the training loss took ' || train_values ||
         ' different values' AS message,
       json_object('series', tag, 'value', val, 'evaluations', same, 'since_step', since, 'train_values', train_values) AS evidence
FROM began

-- id: val_constant
-- title: Validation metric identical at every evaluation
-- severity: warning
-- roles: train_loss
-- roles_any: val_loss, val_acc, val_metric
-- cause: Evaluation does not see the model being trained: a stale or frozen copy is evaluated,
--   a checkpoint is loaded before each evaluation, the evaluation set is empty or constant, or
--   the logged value is cached. A validation score (accuracy, AUC) that never moves means the
--   model's predictions on it never change: usually one class predicted for every input, so the
--   score is chance (AUC 0.5) or the share of that class.
-- fix: Evaluate the model object the optimizer updates (not a deepcopy made at start, not a
--   reloaded checkpoint), check the validation loader yields batches, and log the freshly
--   computed value. For a score stuck from the start, check the model learns at all (its
--   training loss at chance, dead units, the labels joined to the inputs).
-- param min_evals = 3: identical evaluations in a row, at least
-- param saturated = 0.98: a score identical at this or above (as a fraction, or x 100 as a
--   percentage) is a solved task (accuracy 1.0 at every evaluation), not a frozen one
--
-- One evaluation per step: a callback registered twice writes each value several times at
-- the same step (Ultralytics), which is not several identical evaluations.
-- A validation loss is judged over its last evaluations (bit-identical floats do not happen
-- by chance). A score (val_acc, val_metric) takes few values (a count of correct answers
-- over a fixed set), so a converged model can repeat one; it counts only when it never moved,
-- identical from its first evaluation to its last.
WITH v AS (
  SELECT series_id, tag, role, step, value,
         row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k,
         count(*) OVER (PARTITION BY series_id) AS evals
  FROM val_evals WHERE run_id = :run_id
), tail AS MATERIALIZED (
  SELECT series_id, tag, role, count(*) AS n, count(DISTINCT value) AS d, min(step) AS first_step,
         max(step) AS last_step, max(value) AS val
  FROM v WHERE k <= CASE WHEN role = 'val_loss' THEN :min_evals ELSE evals END GROUP BY series_id
), train AS MATERIALIZED (
  SELECT t.*, (SELECT count(DISTINCT p.value) FROM role_points p WHERE p.run_id = :run_id
                 AND p.role = 'train_loss' AND p.value_class = 0
                 AND p.step BETWEEN t.first_step AND t.last_step) AS train_values
  FROM tail t WHERE n >= :min_evals AND d = 1
    AND NOT (role != 'val_loss' AND (val >= :saturated AND val <= 1 OR val >= 100 * :saturated AND val <= 100))
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
         ' different values' ||
         CASE WHEN role = 'val_loss' AND val = 0 THEN ': a loss of exactly 0 at every evaluation means the validation ' ||
                   'set has nothing to score (no targets of this kind: empty or missing labels)'
              WHEN role = 'val_loss' THEN ''
              WHEN val = 0.5 THEN ': 0.5 is chance for an AUC, the predictions never changed'
              WHEN val = 0 THEN ': not one right answer at any evaluation, or nothing to score (an empty or unlabelled ' ||
                   'validation set)'
              ELSE ': the predictions on the validation set never changed (a score stuck from the first evaluation ' ||
                   'is usually one class predicted for every input: chance, or that class''s share)' END AS message,
       json_object('series', tag, 'role', role, 'value', val, 'evaluations', same, 'since_step', since,
                   'train_values', train_values) AS evidence
FROM began

-- id: val_worse_from_start
-- title: Validation far worse than training from the first evaluation
-- severity: warning
-- roles: train_loss, val_loss
-- inhibited_by: non_finite_loss, loss_constant, grokking
-- cause: The model is not evaluated the way it is trained. Validation loss is already several
--   times the training loss at the first evaluation, before any memorizing could open a gap,
--   and stays there. The usual causes: the evaluation runs the model in the wrong mode
--   (model.eval() missing, so BatchNorm normalizes each validation batch by its own statistics,
--   or dropout stays on; or model.train() missing afterwards), the validation data is
--   preprocessed differently (normalization, resizing, tokenization, label mapping), the two
--   losses are not the same quantity (another loss function, a sum against a mean), or the
--   training loss is not what it seems (a leak of the target into the inputs, a loss on an
--   easier subset).
-- fix: Evaluate one training batch through the validation code path: its loss should equal the
--   training loss at that step. If it does not, compare the two paths (model.eval() and
--   torch.no_grad() around evaluation, model.train() after; the same transforms and label
--   mapping for both sets); if it does, look for a difference between the data sets (a leak,
--   a different distribution).
-- param ratio = 2: validation over the training loss at the same point of the run, at least,
--   at the median evaluation and at the latest
-- param first_ratio = 1.5: and at least this at the first evaluation and at every other one
--   (validation never came close to training: overfitting starts from a gap near 1)
-- param min_evals = 2: evaluations that can be compared with a training loss, at least
-- param min_gap = 0.05: and validation minus training, at the median evaluation and at the
--   latest, at least this share of the untrained loss (the first training point): a task
--   learned almost perfectly has both near 0, where a ratio means nothing (validation 0.0015
--   against training 0.000005 is 291x, and a model that generalizes)
--
-- The training loss "at" an evaluation is the median of the later half of its points since the
-- evaluation before (an epoch's worth, in a run that evaluates once an epoch), at or before the
-- evaluation's step: a training loss averaged over an epoch (Keras, Lightning's *_epoch) is
-- higher than the model at the epoch's end, which only makes the gap smaller. An evaluation before the first
-- training point (an evaluation of the untrained model) is not compared.
--
-- Overfitting opens the gap gradually: validation tracks training at first, then parts from
-- it (overfitting judges that). Here the gap is there at the first evaluation and at the
-- latest; a gap that closes later (the model caught up on held-out data) is not reported. The
-- first evaluation may come before training has gone far (5 % into the run), so it needs only
-- 1.5x there, the run's median and latest 2x. Grokking has this shape too until validation
-- drops (memorized first, generalized much later): where the grokking rule recognizes it, this
-- one is muted.
-- Only positive losses are compared (a ratio of losses that may be negative means nothing).
WITH train AS MATERIALIZED (
  SELECT step, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
), first_train AS MATERIALIZED (
  SELECT min(step) AS step FROM train
), evals AS MATERIALIZED (
  SELECT series_id, tag, step, value,
         row_number() OVER (PARTITION BY series_id ORDER BY step) AS i
  FROM val_evals WHERE run_id = :run_id AND role = 'val_loss'
), merged AS (
  -- Training points and evaluations in one stream per validation series: a training point
  -- belongs to the first evaluation at or after its step (`bucket` counts the evaluations
  -- before it), which is one pass, not a scan of the training loss per evaluation.
  SELECT series_id, step, value, is_eval,
         sum(is_eval) OVER (PARTITION BY series_id ORDER BY step, is_eval
                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - is_eval AS bucket
  FROM (SELECT e.series_id, t.step, t.value, 0 AS is_eval FROM train t, (SELECT DISTINCT series_id FROM evals) e
        UNION ALL SELECT series_id, step, value, 1 FROM evals)
), ranked AS (
  SELECT series_id, bucket, value,
         row_number() OVER (PARTITION BY series_id, bucket ORDER BY step DESC) AS rn,
         count(*) OVER (PARTITION BY series_id, bucket) AS cnt
  FROM merged WHERE is_eval = 0
), windows AS MATERIALIZED (
  -- The later half of the points since the evaluation before: where the model stood by the
  -- evaluation, not the untrained start of the first window.
  SELECT series_id, bucket + 1 AS i, tw_median(value) AS trn FROM ranked WHERE rn <= (cnt + 1) / 2
  GROUP BY series_id, bucket
), paired AS MATERIALIZED (
  -- Each evaluation with the training loss since the one before; one with no training point
  -- in between, or before the first one, is not compared.
  SELECT e.series_id, e.tag, e.step, e.value AS val, w.trn
  FROM evals e JOIN windows w USING (series_id, i), first_train f WHERE e.step >= f.step
), judged AS MATERIALIZED (
  SELECT series_id, tag, step, val, trn, val / trn AS r,
         row_number() OVER (PARTITION BY series_id ORDER BY step) AS i,
         row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k,
         count(*) OVER (PARTITION BY series_id) AS n
  FROM paired WHERE val > 0 AND trn > 0
), summary AS MATERIALIZED (
  SELECT series_id, tag, n, min(step) AS first_step, max(step) AS last_step,
         tw_median(r) AS median_ratio, min(r) AS min_ratio, tw_median(val - trn) AS median_gap,
         max(CASE WHEN i = 1 THEN r END) AS first_ratio, max(CASE WHEN k = 1 THEN r END) AS last_ratio,
         max(CASE WHEN i = 1 THEN val END) AS first_val, max(CASE WHEN i = 1 THEN trn END) AS first_trn,
         max(CASE WHEN k = 1 THEN val END) AS last_val, max(CASE WHEN k = 1 THEN trn END) AS last_trn
  FROM judged GROUP BY series_id
), start AS MATERIALIZED (
  -- How far training had come by the first evaluation: its first logged loss is the untrained
  -- model's (or, averaged over the first epoch, higher than where the model stood by its end).
  SELECT (SELECT value FROM train ORDER BY step LIMIT 1) AS untrained
)
SELECT series_id, first_step AS onset_step, first_step, last_step,
       tag || ' was ' || printf('%.3g', first_val) || ' at its first evaluation (step ' || first_step ||
         '), ' || printf('%.3g', first_ratio) || 'x the training loss there (' || printf('%.3g', first_trn) ||
         '), and is ' || printf('%.3g', last_val) || ', ' || printf('%.3g', last_ratio) || 'x, at the latest (step ' ||
         last_step || '; median ' || printf('%.3g', median_ratio) || 'x over ' || n || ' evaluations)' ||
         CASE WHEN last_trn > 0.8 * untrained
              THEN ': training itself has hardly moved from its first loss (' || printf('%.3g', untrained) ||
                   '), so the two may not measure the same thing (another loss function, a sum against a mean)'
              WHEN first_val >= 0.8 * untrained
              THEN ': validation at its first evaluation was no better than the untrained model (' ||
                   printf('%.3g', untrained) || ') while training had already learned'
              ELSE '' END ||
         '; a gap this large from the start points to how the model is evaluated, not to overfitting' AS message,
       json_object('series', tag, 'first_ratio', first_ratio, 'median_ratio', median_ratio,
                   'last_ratio', last_ratio, 'min_ratio', min_ratio, 'evaluations', n,
                   'first_val', first_val, 'first_train', first_trn, 'last_val', last_val,
                   'last_train', last_trn, 'untrained', untrained) AS evidence
FROM summary, start
WHERE n >= :min_evals
  AND first_ratio >= :first_ratio AND min_ratio >= :first_ratio AND median_ratio >= :ratio AND last_ratio >= :ratio
  AND median_gap >= :min_gap * untrained AND last_val - last_trn >= :min_gap * untrained

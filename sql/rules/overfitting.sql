-- id: overfitting
-- title: Overfitting: validation getting worse while training loss falls
-- severity: warning
-- roles: train_loss
-- roles_any: val_loss, val_acc, val_metric
-- inhibited_by: non_finite_loss
-- cause: The model is memorizing the training set: too much capacity or too many epochs for
--   the data, too little regularization, or validation data that differs from training data.
-- fix: Keep the checkpoint from the best validation step (early stopping there); add
--   regularization (weight decay, dropout, augmentation), get more data, or shrink the model.
--   If the gap opened suddenly, check for a train/val preprocessing mismatch.
-- param min_evals = 3: evaluations after the best one, at least
-- param min_rise = 0.02: the latest validation loss is at least this much (relative) above its best
-- param train_z = -2: Mann–Kendall z of the training loss since the best validation step, at most
-- param val_z = 2: Mann–Kendall z of validation since its best, at least (a rise, not noise);
--   with 5 or fewer evaluations after the best, each must instead be above the one before
-- param noise_k = 3: the rise (median after the best minus the best) in units of validation's
--   own noise (robust SD from its second differences, which cancel its trend), at least
-- param noise_k_trend = 1.5: the same where validation's rise since the best is a trend (z >=
--   val_z): the best of many noisy evaluations sits a sd or two low by selection, which a
--   trend does not explain
-- param giveback = 1: where a validation score holds (below), a rising validation loss is
--   still a warning once it has given back this share of what it gained from its first
--   evaluation to its best: at 1, it is worse than at its first evaluation, the model's
--   probabilities worse than before it learned anything from this data (confidently wrong)
--
-- Validation is a loss (lower is better) or a score where higher is better (val_acc, and
-- val_metric: mIoU, mAP, F1); a score is read negated, so "best" is its maximum and "rising"
-- means falling. Thresholds stay relative to the best's size. One evaluation per step: a
-- callback registered twice writes each value several times at the same step (Ultralytics),
-- which is neither several evaluations nor evidence of no noise.
--
-- The score decides. A validation loss that rises while the run's validation score (accuracy,
-- mAP, F1) holds at its best is the model growing overconfident, less calibrated, while its
-- decisions stay right: a practitioner keeps the checkpoint by the score, and the rising loss is
-- a warning sign of later degradation, not harm yet. Such a loss is reported as information,
-- unless it has given back all it learned (giveback).
WITH val AS (
  SELECT series_id, tag, role, direction, step, CASE WHEN direction > 0 THEN -value ELSE value END AS value
  FROM val_evals WHERE run_id = :run_id
), best AS MATERIALIZED (
  SELECT series_id, tag, role, direction, tw_best(step, value, 0) AS j, count(*) AS n
  FROM val GROUP BY series_id
), b AS (
  SELECT series_id, tag, role, direction, n, json_extract(j, '$.first') AS first, json_extract(j, '$.best_step') AS best_step,
         json_extract(j, '$.best') AS best, json_extract(j, '$.last') AS last, json_extract(j, '$.last_step') AS last_step,
         json_extract(j, '$.since_points') AS evals_after
  FROM best
), noise AS MATERIALIZED (
  SELECT series_id, tw_noise_sd(step, value) AS sd FROM val GROUP BY series_id
), after AS MATERIALIZED (
  SELECT b.*, (SELECT tw_median(v.value) FROM val v WHERE v.series_id = b.series_id AND v.step > b.best_step) AS med_after,
         (SELECT json_extract(tw_trend(v.step, v.value), '$.mk_z') FROM val v
           WHERE v.series_id = b.series_id AND v.step >= b.best_step) AS val_z,
         (SELECT count(*) FROM (SELECT v.value < lag(v.value) OVER (ORDER BY v.step) AS fell FROM val v
           WHERE v.series_id = b.series_id AND v.step >= b.best_step) WHERE fell) AS falls,
         (SELECT tw_trend(p.step, p.value) FROM role_points p
           WHERE p.run_id = :run_id AND p.role = 'train_loss' AND p.value_class = 0 AND p.step >= b.best_step) AS tj,
         (SELECT tag FROM run_roles WHERE run_id = :run_id AND role = 'train_loss' LIMIT 1) AS train_tag,
         (SELECT sd FROM noise WHERE noise.series_id = b.series_id) AS val_sd
  FROM b WHERE evals_after >= :min_evals
), worse AS MATERIALIZED (
  -- Each validation series that got worse while training improved.
  SELECT * FROM after
  -- (Values are negated scores for a metric: the rise over the best is measured against its size.)
  WHERE best != 0 AND (direction <= 0) = (best > 0)
    AND last - best >= abs(best) * :min_rise AND med_after - best >= abs(best) * :min_rise / 2
    AND json_extract(tj, '$.mk_z') <= :train_z
    AND (val_z >= :val_z OR (evals_after <= 5 AND falls = 0))
    AND med_after - best >= CASE WHEN val_z >= :val_z THEN :noise_k_trend ELSE :noise_k END * COALESCE(val_sd, 0)
), held AS MATERIALIZED (
  -- For a rising loss: a score of the run measured over the same stretch (min_evals evaluations
  -- since the loss's best at least) that did not get worse; the one nearest its best speaks.
  SELECT w.series_id,
         (SELECT json_object('tag', s.tag, 'best', abs(s.best), 'best_step', s.best_step, 'last', abs(s.last),
                             'last_step', s.last_step)
            FROM b s WHERE s.direction > 0 AND s.series_id NOT IN (SELECT series_id FROM worse)
              AND (SELECT count(*) FROM val v WHERE v.series_id = s.series_id AND v.step >= w.best_step) >= :min_evals
            ORDER BY s.last / s.best DESC LIMIT 1) AS score
  FROM worse w
  WHERE w.direction <= 0 AND NOT EXISTS (SELECT 1 FROM worse s WHERE s.direction > 0)
), judged AS (
  SELECT worse.*, held.score,
         held.score IS NOT NULL AND first > best AND (last - best) < :giveback * (first - best) AS calibration
  FROM worse LEFT JOIN held USING (series_id)
)
SELECT series_id, best_step AS onset_step, best_step AS first_step, last_step,
       CASE WHEN calibration THEN 'info' ELSE 'warning' END AS severity,
       CASE WHEN direction <= 0
         THEN tag || ' has risen from its best ' || printf('%.4g', best) || ' at step ' || best_step || ' to ' ||
              printf('%.4g', last) || ' (+' || printf('%.0f', 100 * (last / best - 1)) || '%)'
         ELSE tag || ' (higher is better) has fallen from its best ' || printf('%.4g', -best) || ' at step ' ||
              best_step || ' to ' || printf('%.4g', -last) || ' (' || printf('%.0f', 100 * (best - last) / best) || '%)'
       END || ' over ' || evals_after ||
         ' evaluations, while the training loss (' || train_tag || ') kept falling (' ||
         printf('%.4g', json_extract(tj, '$.start')) || ' to ' || printf('%.4g', json_extract(tj, '$.end')) || ')' ||
         CASE WHEN calibration
           THEN ', but ' || json_extract(score, '$.tag') || ' held: ' || printf('%.4g', json_extract(score, '$.last')) ||
                ' at step ' || json_extract(score, '$.last_step') || ', its best ' ||
                printf('%.4g', json_extract(score, '$.best')) || ' at step ' || json_extract(score, '$.best_step') ||
                '. The model is growing overconfident (less calibrated) while its decisions stay right: keep the ' ||
                'checkpoint by the score, and watch it.'
           WHEN score IS NOT NULL
           THEN '; ' || json_extract(score, '$.tag') || ' held (' || printf('%.4g', json_extract(score, '$.last')) ||
                ', its best ' || printf('%.4g', json_extract(score, '$.best')) || '), but the loss is now ' ||
                CASE WHEN last >= first THEN 'above' ELSE 'near' END || ' its first evaluation (' ||
                printf('%.4g', first) || '): the model is confidently wrong where it errs. ' ||
                'The best checkpoint is the one at step ' || best_step || '.'
           ELSE '. The best checkpoint is the one at step ' || best_step || '.' END AS message,
       json_object('series', tag, 'role', role, 'higher_is_better', direction > 0,
                   'best_val_step', best_step, 'best_val', abs(best), 'last_val', abs(last), 'first_val', abs(first),
                   'evaluations_after_best', evals_after, 'train_series', train_tag,
                   'train_trend_z', json_extract(tj, '$.mk_z'), 'train_start', json_extract(tj, '$.start'),
                   'train_end', json_extract(tj, '$.end'), 'val_trend_z', val_z, 'val_noise_sd', val_sd,
                   'score_held', json(score), 'calibration', calibration) AS evidence,
       CASE WHEN calibration THEN 'The validation loss rises while the validation score stays at its best: the model ' ||
         'grows more confident on the examples it gets wrong (calibration), which a score does not see. Often the ' ||
         'first sign of overfitting; harmless while the score holds.' END AS cause,
       CASE WHEN calibration THEN 'Keep the checkpoint with the best validation score; if the score starts to fall, ' ||
         'stop there and add regularization (weight decay, dropout, augmentation, label smoothing). If calibrated ' ||
         'probabilities matter, select by the loss or calibrate afterwards (temperature scaling).' END AS fix
FROM judged

-- id: val_stall
-- title: Validation has stopped improving
-- severity: info
-- roles: train_loss
-- roles_any: val_loss, val_acc, val_metric
-- inhibited_by: overfitting, val_constant, non_finite_loss, grokking, stale_run
-- cause: The model has learned what it can from this data at this learning rate: training
--   goes on without improving what you measure.
-- fix: Stop here and keep the best checkpoint (early stopping), or lower the learning rate
--   (ReduceLROnPlateau), or add data or regularization if training loss is still falling.
-- param min_delta = 0.001: relative improvement that counts as progress (at least; more when
--   validation's own evaluation-to-evaluation noise is larger)
-- param noise_k = 2: progress must also beat this many SDs of validation's own noise
-- param patience = 5: evaluations without progress
-- param patience_seconds = 600: and at least this much of the run's time ...
-- param patience_frac = 0.25: ... or this fraction of the run's training steps: a stall is
--   measured in the run's progress, and a small model on a CPU evaluates every second
-- param train_z = -2: Mann–Kendall z of the training loss since the best evaluation, at most:
--   training still improves (a run whose training loss has levelled off too has converged, or
--   stalled as a whole, which loss_plateau judges)
-- param saturated = 0.98: a score (higher is better) whose best reached this (as a fraction, or
--   this x 100 as a percentage) has succeeded: accuracy at 1.0 or mAP at 0.99 cannot improve much
--
-- Validation is a loss, or a score where higher is better (val_acc; val_metric: mIoU, mAP, F1),
-- read negated so that its best is its maximum.
WITH val AS (
  SELECT series_id, tag, role, direction, step, CASE WHEN direction > 0 THEN -value ELSE value END AS value
  FROM val_evals WHERE run_id = :run_id
    AND NOT (direction > 0 AND series_id IN (
      SELECT series_id FROM val_evals WHERE run_id = :run_id AND direction > 0
      GROUP BY series_id HAVING max(value) >= :saturated AND max(value) <= 1 OR max(value) >= 100 * :saturated AND max(value) <= 100))
), noise AS MATERIALIZED (
  -- Validation's own noise, relative: a dip within it is no progress.
  SELECT series_id, tw_noise_sd(step, value) / abs(tw_median(value)) AS rel FROM val GROUP BY series_id
), best AS MATERIALIZED (
  SELECT val.series_id, tag, role, direction, tw_best(step, value, max(:min_delta, :noise_k * COALESCE(noise.rel, 0))) AS j,
         max(:min_delta, :noise_k * COALESCE(noise.rel, 0)) AS delta
  FROM val LEFT JOIN noise USING (series_id)
  GROUP BY val.series_id
), b AS (
  SELECT series_id, tag, role, direction, delta, json_extract(j, '$.best_step') AS best_step, json_extract(j, '$.best') AS best,
         json_extract(j, '$.since_points') AS evals, json_extract(j, '$.last_step') AS last_step,
         json_extract(j, '$.last') AS last
  FROM best
), timed AS MATERIALIZED (
  SELECT b.*,
         (SELECT max(wall_time) FROM role_points p WHERE p.run_id = :run_id AND p.series_id = b.series_id) -
         (SELECT min(wall_time) FROM role_points p WHERE p.run_id = :run_id AND p.series_id = b.series_id
            AND p.step = b.best_step) AS seconds,
         (SELECT max(step) FROM role_points p WHERE p.run_id = :run_id AND p.role = 'train_loss') AS train_last,
         (SELECT min(step) FROM role_points p WHERE p.run_id = :run_id AND p.role = 'train_loss') AS train_first
  FROM b WHERE evals >= :patience
), stalled AS MATERIALIZED (
  -- (The training loss's trend is read only for a stall long enough to report.)
  SELECT timed.*, (SELECT json_extract(tw_trend(p.step, p.value), '$.mk_z') FROM role_points p WHERE p.run_id = :run_id
                     AND p.role = 'train_loss' AND p.value_class = 0 AND p.step >= timed.best_step) AS train_z
  FROM timed WHERE train_last > best_step
    AND (seconds >= :patience_seconds OR train_last - best_step >= :patience_frac * (train_last - train_first))
)
SELECT series_id, best_step AS onset_step, best_step AS first_step, last_step,
       tag || ' has not improved by ' || printf('%.2g', 100 * delta) || '% for ' || evals ||
         ' evaluations (' || CASE WHEN seconds >= 60 THEN printf('%.0f', seconds / 60.0) || ' min'
                                 ELSE printf('%.0f', seconds) || ' s' END || ') since its best ' || printf('%.4g', abs(best)) ||
         CASE WHEN direction > 0 THEN ' (higher is better)' ELSE '' END ||
         ' at step ' || best_step || '; training went on to step ' || train_last AS message,
       json_object('series', tag, 'role', role, 'higher_is_better', direction > 0, 'best_step', best_step,
                   'best', abs(best), 'evaluations_since', evals, 'seconds_since', seconds, 'last', abs(last)) AS evidence
FROM stalled WHERE train_z <= :train_z

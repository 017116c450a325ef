-- id: loss_acc_disagree
-- title: The loss falls but the accuracy does not move
-- severity: warning
-- roles: train_loss
-- roles_any: train_acc, val_acc
-- inhibited_by: non_finite_loss, loss_constant
-- cause: The model is changing how confident it is without changing a single decision: only
--   the parts that scale or shift every class alike are learning (a temperature or logit
--   scale, an output bias: the rest frozen or missing from the optimizer), the model is
--   learning the class prior of an imbalanced set (predicting the majority class ever more
--   confidently), label smoothing rewards it for softening answers it already had, or the
--   accuracy is not computed from the same predictions (a metric bug: wrong argmax axis,
--   labels of another batch).
-- fix: Check which parameters the optimizer holds and which have requires_grad (count them
--   against the model's); compare the class counts of the predictions with the labels'; and
--   compute the accuracy by hand on one batch from the same logits the loss used.
-- param min_points = 8: accuracy points (evaluations, for validation), at least
-- param min_drop = 0.2: the loss fell by at least this share over the accuracy's span
-- param loss_z = -2.5: Mann–Kendall z of the loss over that span, at most (a fall, not noise);
--   or else
-- param noise_k = 5: the fall is at least this many times the loss's point-to-point noise (a
--   drop in the first evaluations and flat after is no trend, but no noise either)
-- param max_gain = 0.03: the accuracy gained at most this much (as a fraction; x 100 for a
--   percentage) from the start to the end of its span
-- param headroom_share = 0.1: and at most this share of what it had left to gain (1 - its
--   start): an accuracy already at 0.96 that gains 0.01 took a quarter of the way to 1
-- param acc_z = 2: and its Mann–Kendall z stays below this (no steady climb, however small)
-- param saturated = 0.98: an accuracy at or above this at its end has nothing left to gain
-- param max_fall = 0.1: and it fell at most this much: an accuracy that fell far while its loss
--   fell did not stall (a per-batch training accuracy under mixup or CutMix, scored against one
--   of two mixed labels, swings between its extremes whatever the model learns)
--
-- Each accuracy is paired with the loss of its phase: the training accuracy with the training
-- loss, a validation accuracy with the validation loss, over the steps the accuracy spans.
-- Start and end are the medians of the first and last tenth of the points (one point at
-- least: an epoch-level series of 15 points has most of its fall in the first epoch). A loss
-- that fell by a fifth while the accuracy, not saturated, neither gained nor climbed, is the
-- seeds' "loss decreases, accuracy stalls". The reverse (validation loss rising while the
-- validation accuracy holds, a calibration drift) is overfitting's information finding.
WITH acc AS MATERIALIZED (
  SELECT 'train' AS phase, series_id, tag, step, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_acc' AND value_class = 0
  UNION ALL
  SELECT 'val', series_id, tag, step, value FROM val_evals WHERE run_id = :run_id AND role = 'val_acc'
), loss AS MATERIALIZED (
  SELECT 'train' AS phase, series_id, tag, step, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
  UNION ALL
  SELECT 'val', series_id, tag, step, value FROM val_evals WHERE run_id = :run_id AND role = 'val_loss'
), a AS MATERIALIZED (
  SELECT phase, series_id, tag, count(*) AS n, min(step) AS first_step, max(step) AS last_step,
         CASE WHEN max(value) > 1 THEN 100.0 ELSE 1.0 END AS scale,
         tw_ends(step, value, 1, 0.1) AS ends, tw_trend(step, value) AS trend
  FROM acc GROUP BY series_id
), l AS MATERIALIZED (
  SELECT a.phase, a.series_id AS acc_id, loss.series_id, loss.tag, count(*) AS n, min(loss.value) AS lo,
         tw_ends(loss.step, loss.value, 1, 0.1) AS ends, tw_trend(loss.step, loss.value) AS trend
  FROM a JOIN loss ON loss.phase = a.phase AND loss.step BETWEEN a.first_step AND a.last_step
  GROUP BY a.series_id, loss.series_id
), judged AS MATERIALIZED (
  SELECT a.phase, a.series_id, a.tag AS acc_tag, l.tag AS loss_tag, a.n, a.first_step, a.last_step, a.scale,
         json_extract(a.ends, '$.start') / a.scale AS a0, json_extract(a.ends, '$.end') / a.scale AS a1,
         COALESCE(json_extract(a.trend, '$.mk_z'), 0) AS az,
         json_extract(l.ends, '$.start') AS l0, json_extract(l.ends, '$.end') AS l1,
         COALESCE(json_extract(l.trend, '$.mk_z'), 0) AS lz, json_extract(l.trend, '$.noise_sd') AS noise,
         l.n AS loss_n, l.lo
  FROM a JOIN l ON l.acc_id = a.series_id
)
SELECT series_id, first_step AS onset_step, first_step, last_step,
       loss_tag || ' fell ' || printf('%.0f', 100 * (1 - l1 / l0)) || '% (' || printf('%.4g', l0) || ' to ' ||
         printf('%.4g', l1) || ') from step ' || first_step || ' to ' || last_step || ' while ' || acc_tag ||
         CASE WHEN a1 = a0 THEN ' stayed at ' || printf('%.4g', a1 * scale)
              ELSE ' went from ' || printf('%.4g', a0 * scale) || ' to ' || printf('%.4g', a1 * scale) END ||
         ' (' || n || ' points' || CASE WHEN phase = 'val' THEN ', evaluations' ELSE '' END ||
         '): the model grew more confident without changing its answers' AS message,
       json_object('phase', phase, 'accuracy', acc_tag, 'loss', loss_tag, 'loss_start', l0, 'loss_end', l1,
                   'loss_z', lz, 'loss_noise', noise, 'acc_start', a0 * scale, 'acc_end', a1 * scale, 'acc_z', az, 'points', n) AS evidence
FROM judged
WHERE n >= :min_points AND loss_n >= :min_points AND lo > 0 AND l0 > 0
  AND l1 <= (1 - :min_drop) * l0 AND (lz <= :loss_z OR l0 - l1 >= :noise_k * noise)
  AND a1 - a0 <= :max_gain AND a1 - a0 <= :headroom_share * (1 - a0) AND az < :acc_z AND a1 < :saturated
  AND a0 - a1 <= :max_fall

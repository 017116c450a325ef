-- id: grad_vanishing
-- title: Gradients vanish (in some layers, or all of them)
-- severity: warning
-- roles_any: grad_norm, grad_norm_layer
-- cause: Gradients die on their way back to the early layers: saturating activations
--   (sigmoid/tanh) in a deep stack, a poor initialization, missing residual connections or
--   normalization, or a layer that is frozen by mistake.
-- fix: Use ReLU/GELU with He initialization, add residual connections and normalization
--   (LayerNorm/BatchNorm), and check requires_grad on the affected parameters; per-layer
--   learning rates are a last resort.
-- param recent = 20: recent points per layer whose median is compared
-- param max_ratio = 0.001: weakest layer over strongest, at most
-- param max_abs = 0.0001: and the weakest layer's norm itself, at most
-- param global_ratio = 0.001: a global gradient norm: its recent median over its early one
--   (first and last 10% of the points), at most, and below max_abs too ...
-- param loss_fell = 0.1: ... while the training loss's recent median is still above this
--   fraction of its early one (it fell less than 10x): gradients that shrink with the loss are
--   convergence; gradients that collapse while the loss stays put have died
-- param min_points = 20: global-norm points needed
--
-- Per-layer norms show the gradient dying on its way back to the early layers. A run that logs
-- only the global norm shows it when every layer has died: the norm collapses by three orders
-- or more to ~1e-7 (saturated sigmoids in a deep stack) or is exactly 0 at every step (weights
-- initialised to zero, a graph detached from the loss, parameters frozen by mistake) while the
-- loss does not move: nothing is learning any more.
WITH pts AS (
  SELECT series_id, tag, step, value, row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k
  FROM role_points WHERE run_id = :run_id AND role = 'grad_norm_layer' AND value_class = 0
), layer AS MATERIALIZED (
  SELECT series_id, tag, tw_median(value) AS med, min(step) AS first_step, max(step) AS last_step
  FROM pts WHERE k <= :recent GROUP BY series_id
), ext AS MATERIALIZED (
  SELECT (SELECT series_id FROM layer ORDER BY med ASC LIMIT 1) AS weak_id,
         (SELECT tag FROM layer ORDER BY med ASC LIMIT 1) AS weak,
         (SELECT med FROM layer ORDER BY med ASC LIMIT 1) AS lo,
         (SELECT tag FROM layer ORDER BY med DESC LIMIT 1) AS strong,
         (SELECT med FROM layer ORDER BY med DESC LIMIT 1) AS hi,
         (SELECT count(*) FROM layer) AS layers,
         (SELECT count(*) FROM layer WHERE med <= :max_abs) AS weak_layers,
         (SELECT min(first_step) FROM layer) AS first_step, (SELECT max(last_step) FROM layer) AS last_step
), began AS MATERIALIZED (
  -- Where the weakest layer went (and stayed) at or below max_abs.
  SELECT ext.*, (SELECT max(step) FROM scalars WHERE series_id = ext.weak_id AND superseded = 0
                   AND value > :max_abs) AS last_above,
         (SELECT min(step) FROM scalars WHERE series_id = ext.weak_id AND superseded = 0) AS series_first
  FROM ext
), onset AS MATERIALIZED (
  SELECT began.*, COALESCE((SELECT min(step) FROM scalars WHERE series_id = began.weak_id AND superseded = 0
                              AND step > began.last_above), began.series_first) AS since
  FROM began
)
SELECT weak_id AS series_id, since AS onset_step, first_step, last_step,
       weak_layers || ' of ' || layers || ' layers have gradient norms at or below ' || printf('%.0e', :max_abs) ||
         '; the weakest, ' || weak || ', is ' || printf('%.2e', lo) || ', ' || printf('%.0e', hi / lo) ||
         'x below the strongest (' || strong || ', ' || printf('%.2e', hi) || ')' AS message,
       json_object('weakest', weak, 'weakest_norm', lo, 'strongest', strong, 'strongest_norm', hi,
                   'layers', layers, 'weak_layers', weak_layers) AS evidence
FROM onset WHERE layers >= 2 AND hi > 0 AND lo > 0 AND lo / hi <= :max_ratio AND lo <= :max_abs
UNION ALL
SELECT series_id, CASE WHEN peak = 0 THEN first_step ELSE since END AS onset_step, first_step, last_step,
       CASE WHEN peak = 0
         THEN tag || ' is exactly 0 at every one of its ' || n || ' points while ' || loss_tag || ' stays at about ' ||
              printf('%.4g', loss_recent) || ': no gradient reaches the weights'
         ELSE tag || ' collapsed from ' || printf('%.3g', early) || ' (median of its first tenth) to ' ||
              printf('%.2e', recent) || ' (last tenth), ' || printf('%.0e', early / max(recent, 1e-300)) ||
              'x smaller, while ' || loss_tag || ' only went from ' || printf('%.4g', loss_early) || ' to ' ||
              printf('%.4g', loss_recent) || ': the gradients vanished, and the model stopped learning' END AS message,
       json_object('series', tag, 'early_median', early, 'recent_median', recent, 'max', peak, 'points', n,
                   'loss', loss_tag, 'loss_early', loss_early, 'loss_recent', loss_recent) AS evidence
FROM (
  SELECT g.*, (SELECT min(step) FROM role_points p WHERE p.run_id = :run_id AND p.series_id = g.series_id
                 AND p.value_class = 0 AND p.step > COALESCE((SELECT max(step) FROM role_points q
                   WHERE q.run_id = :run_id AND q.series_id = g.series_id AND q.value_class = 0
                     AND q.value > g.early * :global_ratio), g.first_step - 1)) AS since
  FROM (
    SELECT s.series_id, s.tag, s.n, s.first_step, s.last_step, s.peak,
           json_extract(s.ends, '$.start') AS early, json_extract(s.ends, '$.end') AS recent,
           l.tag AS loss_tag, json_extract(l.ends, '$.start') AS loss_early, json_extract(l.ends, '$.end') AS loss_recent
    FROM (SELECT series_id, tag, count(*) AS n, min(step) AS first_step, max(step) AS last_step,
                 max(value) AS peak, tw_ends(step, value, 5) AS ends
          FROM role_points WHERE run_id = :run_id AND role = 'grad_norm' AND value_class = 0
          GROUP BY series_id) s,
         (SELECT tag, tw_ends(step, value, 5) AS ends
          FROM role_points WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
          GROUP BY series_id ORDER BY count(*) DESC LIMIT 1) l
  ) g
  WHERE n >= :min_points AND recent <= :max_abs AND loss_early > 0 AND loss_recent > loss_early * :loss_fell
    AND (peak = 0 OR early > 0 AND recent <= early * :global_ratio)
)

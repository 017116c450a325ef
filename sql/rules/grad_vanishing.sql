-- id: grad_vanishing
-- title: Gradients vanish in some layers
-- severity: warning
-- roles: grad_norm_layer
-- cause: Gradients die on their way back to the early layers: saturating activations
--   (sigmoid/tanh) in a deep stack, a poor initialization, missing residual connections or
--   normalization, or a layer that is frozen by mistake.
-- fix: Use ReLU/GELU with He initialization, add residual connections and normalization
--   (LayerNorm/BatchNorm), and check requires_grad on the affected parameters; per-layer
--   learning rates are a last resort.
-- param recent = 20: recent points per layer whose median is compared
-- param max_ratio = 0.001: weakest layer over strongest, at most
-- param max_abs = 0.0001: and the weakest layer's norm itself, at most
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

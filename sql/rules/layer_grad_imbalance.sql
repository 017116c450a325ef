-- id: layer_grad_imbalance
-- title: A layer's gradient is exactly zero, or layers are orders of magnitude apart
-- severity: warning
-- roles: grad_norm_layer
-- inhibited_by: grad_vanishing
-- cause: A layer whose gradient is exactly zero takes no part in the loss: it is detached,
--   frozen, unused in the forward pass, or dead (all ReLUs off). Norms orders of magnitude
--   apart make one learning rate wrong for most layers.
-- fix: For a zero gradient: check the layer is used in forward(), that nothing detaches its
--   output, and that requires_grad is set; for dead ReLUs use LeakyReLU/GELU or a lower LR. For
--   spread norms: normalization layers, or per-layer learning rates (LARS/LAMB-style scaling).
-- param recent = 20: recent points per layer
-- param max_spread = 10000: strongest over weakest (nonzero) layer median, at most
WITH pts AS (
  SELECT series_id, tag, step, value, row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k
  FROM role_points WHERE run_id = :run_id AND role = 'grad_norm_layer' AND value_class = 0
), layer AS MATERIALIZED (
  SELECT series_id, tag, tw_median(value) AS med, max(abs(value)) AS peak, count(*) AS n,
         min(step) AS first_step, max(step) AS last_step
  FROM pts WHERE k <= :recent GROUP BY series_id
)
SELECT series_id,
       COALESCE((SELECT min(s.step) FROM scalars s WHERE s.series_id = layer.series_id AND s.superseded = 0
                   AND s.step > (SELECT max(z.step) FROM scalars z WHERE z.series_id = layer.series_id
                                   AND z.superseded = 0 AND z.value != 0)),
                (SELECT min(s.step) FROM scalars s WHERE s.series_id = layer.series_id)) AS onset_step,
       first_step, last_step,
       tag || ' is exactly 0 at each of its last ' || n || ' points (steps ' || first_step || ' to ' ||
         last_step || '): this layer receives no gradient' AS message,
       json_object('series', tag, 'points', n, 'zero', 1) AS evidence
FROM layer WHERE peak = 0 AND n >= 5
UNION ALL
SELECT (SELECT series_id FROM layer WHERE med > 0 ORDER BY med LIMIT 1), min(first_step), min(first_step), max(last_step),
       'layer gradient norms span ' || printf('%.0e', max(med) / min(med)) || 'x: from ' ||
         (SELECT tag FROM layer WHERE med > 0 ORDER BY med LIMIT 1) || ' (' || printf('%.2e', min(med)) || ') to ' ||
         (SELECT tag FROM layer ORDER BY med DESC LIMIT 1) || ' (' || printf('%.2e', max(med)) || ')',
       json_object('spread', max(med) / min(med), 'layers', count(*))
FROM layer WHERE med > 0
HAVING count(*) >= 2 AND max(med) / min(med) >= :max_spread

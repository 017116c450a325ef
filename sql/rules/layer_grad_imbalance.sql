-- id: layer_grad_imbalance
-- title: A layer's gradient is exactly zero or data-independent, or layers are orders of magnitude apart
-- severity: warning
-- roles: grad_norm_layer
-- inhibited_by: grad_vanishing
-- cause: A layer whose gradient is exactly zero takes no part in the loss: it is detached,
--   frozen, unused in the forward pass, or dead (all ReLUs off). A layer whose gradient norm
--   is near-constant while every other layer's moves with its batches gets nothing from the
--   data either: what is left is a data-independent term (an L2 penalty added to the loss, as
--   Keras kernel_regularizer does), so it only shrinks. The loss can still fall while the rest
--   of the model learns around it, slower and to a worse floor. Norms orders of magnitude
--   apart make one learning rate wrong for most layers.
-- fix: For a zero or constant gradient: check the layer is used in forward(), that nothing
--   detaches its output, and that requires_grad is set; look at its activations (all ReLUs off
--   from a large negative bias or a blow-up: re-initialise, use LeakyReLU/GELU or a lower LR;
--   a gate initialised at 0 and left out of the optimizer). For
--   spread norms: normalization layers, or per-layer learning rates (LARS/LAMB-style scaling).
-- param recent = 20: recent points per layer
-- param max_spread = 10000: strongest over weakest (nonzero) layer median, at most
-- param flat_step = 0.02: a layer whose norm changes by at most this (relative) between each
--   of its recent points is flat
-- param peer_step = 0.1: while another layer's typical change between points (its median) is
--   at least this, and ten times the flat layer's largest: the batches move the others
--
-- A flat layer is judged against the others, not alone: a full-batch run (no minibatch noise)
-- moves every layer smoothly, 0.3 % per point, and says nothing.
WITH pts AS (
  SELECT series_id, tag, step, value, row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k
  FROM role_points WHERE run_id = :run_id AND role = 'grad_norm_layer' AND value_class = 0
), layer AS MATERIALIZED (
  SELECT series_id, tag, tw_median(value) AS med, max(abs(value)) AS peak, count(*) AS n,
         min(step) AS first_step, max(step) AS last_step
  FROM pts WHERE k <= :recent GROUP BY series_id
), moves AS MATERIALIZED (
  -- Each point's relative change from the one before (the next older), per layer.
  SELECT series_id, step, k, abs(value / lead(value) OVER (PARTITION BY series_id ORDER BY k) - 1) AS ch FROM pts
), moved AS MATERIALIZED (
  SELECT series_id, max(ch) AS max_ch, tw_median(ch) AS med_ch FROM moves WHERE k < :recent GROUP BY series_id
), flat AS MATERIALIZED (
  SELECT l.*, m.max_ch, (SELECT max(o.med_ch) FROM moved o WHERE o.series_id != l.series_id) AS peer_ch,
         -- Flat since the last time it moved by more than flat_step (or from its first point).
         COALESCE((SELECT min(p.step) FROM pts p WHERE p.series_id = l.series_id AND p.step >
                     (SELECT max(x.step) FROM moves x WHERE x.series_id = l.series_id AND x.ch > :flat_step)),
                  (SELECT min(p.step) FROM pts p WHERE p.series_id = l.series_id)) AS since
  FROM layer l JOIN moved m USING (series_id)
  WHERE l.med > 0 AND l.n >= 10 AND m.max_ch <= :flat_step
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
SELECT series_id, since, since, last_step,
       tag || ' has changed by at most ' || printf('%.2g', 100 * max_ch) || '% between each of its last ' || n ||
         ' points (steps ' || first_step || ' to ' || last_step || ', ' || printf('%.3g', med) ||
         ') while another layer''s gradient norm moves ' || printf('%.0f', 100 * peer_ch) ||
         '% from point to point: no gradient from the data reaches this layer, only a data-independent term',
       json_object('series', tag, 'points', n, 'max_change', max_ch, 'peer_change', peer_ch, 'level', med, 'flat_since', since)
FROM flat WHERE peer_ch >= :peer_step AND peer_ch >= 10 * max_ch
UNION ALL
SELECT (SELECT series_id FROM layer WHERE med > 0 ORDER BY med LIMIT 1), min(first_step), min(first_step), max(last_step),
       'layer gradient norms span ' || printf('%.0e', max(med) / min(med)) || 'x: from ' ||
         (SELECT tag FROM layer WHERE med > 0 ORDER BY med LIMIT 1) || ' (' || printf('%.2e', min(med)) || ') to ' ||
         (SELECT tag FROM layer ORDER BY med DESC LIMIT 1) || ' (' || printf('%.2e', max(med)) || ')',
       json_object('spread', max(med) / min(med), 'layers', count(*))
FROM layer WHERE med > 0
HAVING count(*) >= 2 AND max(med) / min(med) >= :max_spread

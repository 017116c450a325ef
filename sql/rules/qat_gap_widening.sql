-- id: qat_gap_widening
-- title: Quantization gap widens: the quantized model falls behind the float one
-- severity: warning
-- roles: qat_loss, fp_loss
-- inhibited_by: non_finite_loss
-- cause: The quantized model's loss pulls away from the full-precision model's over training:
--   the model is learning weights (or activations) that do not survive quantization. The usual
--   causes are fake quantization not actually in the training forward (disabled for calibration
--   and never re-enabled, or applied only at evaluation), so the float model trains freely; a
--   quantizer range frozen at calibration while the weights keep growing past it and are
--   clipped (observers frozen too early, no weight decay); outlier weights or channels that one
--   per-tensor scale cannot hold; a bit width too low for the layer.
-- fix: Check fake quantization is on in the training forward (the QAT loss is the loss being
--   optimized); keep the observers updating (or learn the scales: LSQ, PACT) until late in
--   training and freeze them only near the end; use per-channel or group-wise scales; add
--   weight decay or clip the latent weights to the quantizer's range; start QAT earlier; keep
--   the sensitive layers (first, last, attention projections) at a higher precision.
-- param min_points = 10: steps where both losses are logged, at least
-- param ratio = 2: the gap (quantized minus float loss) at the latest (median of the last tenth)
--   is at least this many times its median from a tenth to a quarter into the run
-- param min_rel = 0.2: and at least this share of the float loss at the latest (a gap of a few
--   percent is the price of quantization, not a failure)
-- param min_z = 2: and it rose over the run after its first quarter (Mann-Kendall z, at least:
--   a gap that widened and then held at its new level counts, one that came back down does not)
--
-- The two losses are paired where both were logged at one step. The first tenth is left out
-- (both start at the untrained model's loss and part as the float model learns faster); a gap
-- that opened there and then held is the constant cost of quantization, not this. The trend is
-- read after the first quarter: a gap that is still as wide at the end as where it rose to.
WITH q AS (
  SELECT step, value FROM role_points WHERE run_id = :run_id AND role = 'qat_loss' AND value_class = 0
), f AS (
  SELECT step, value, tag FROM role_points WHERE run_id = :run_id AND role = 'fp_loss' AND value_class = 0
), pairs AS MATERIALIZED (
  SELECT q.step, q.value AS qv, f.value AS fv, q.value - f.value AS gap,
         row_number() OVER (ORDER BY q.step) AS i, count(*) OVER () AS n
  FROM (SELECT step, avg(value) AS value FROM q GROUP BY step) q
  JOIN (SELECT step, avg(value) AS value FROM f GROUP BY step) f USING (step)
), judged AS MATERIALIZED (
  SELECT max(n) AS n, min(step) AS first_step, max(step) AS last_step,
         tw_median(CASE WHEN i > n * 0.1 AND i <= n * 0.25 THEN gap END) AS early_gap,
         json_extract(tw_ends(step, gap, 3, 0.1), '$.end') AS late_gap,
         json_extract(tw_ends(step, fv, 3, 0.1), '$.end') AS late_fp,
         json_extract(tw_ends(step, qv, 3, 0.1), '$.end') AS late_q,
         json_extract(tw_trend(CASE WHEN i > n * 0.25 THEN step END, CASE WHEN i > n * 0.25 THEN gap END), '$.mk_z') AS z
  FROM pairs
), onset AS MATERIALIZED (
  -- Where the gap first passed twice its early level (and a tenth of the float loss).
  SELECT min(p.step) AS step FROM pairs p, judged j
  WHERE p.i > p.n * 0.1 AND p.gap >= :ratio * max(j.early_gap, 0) AND p.gap >= 0.1 * abs(p.fv)
)
SELECT NULL AS series_id, onset.step AS onset_step, first_step, last_step,
       (SELECT tag FROM run_roles WHERE run_id = :run_id AND role = 'qat_loss' LIMIT 1) || ' is ' ||
         printf('%.4g', late_q) || ' against ' ||
         (SELECT tag FROM run_roles WHERE run_id = :run_id AND role = 'fp_loss' LIMIT 1) || ' ' ||
         printf('%.4g', late_fp) || ' at the latest (step ' || last_step || '): a gap of ' || printf('%.3g', late_gap) ||
         ' (' || printf('%.0f', 100 * late_gap / abs(late_fp)) || '% of the float loss), up from ' ||
         printf('%.3g', early_gap) || ' a tenth to a quarter into the run, widening since (Mann-Kendall z ' ||
         printf('%.1f', z) || '): what the float model learns does not survive quantization' AS message,
       json_object('early_gap', early_gap, 'late_gap', late_gap, 'late_fp', late_fp, 'late_quantized', late_q,
                   'trend_z', z, 'pairs', n) AS evidence
FROM judged, onset
WHERE n >= :min_points AND late_gap >= :ratio * max(early_gap, 0) AND late_gap >= :min_rel * abs(late_fp)
  AND late_gap > 0 AND z >= :min_z

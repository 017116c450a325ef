-- id: ternary_weight_collapse
-- title: Ternary weights collapsed: a layer's weights went to 0 (or to one sign)
-- severity: warning
-- roles: ternary_weights
-- inhibited_by: non_finite_loss
-- cause: A ternary layer's weights ({-a, 0, +a}) have drifted to one value: nearly all to 0,
--   so the layer passes almost nothing and is effectively dead, or nearly all the non-zero ones
--   to one sign, so the layer can only add, never subtract. Zeros take over when the latent
--   (full-precision) weights shrink under the ternarization threshold: a fixed threshold tuned
--   for the initial weights' scale while weight decay (too strong, or AdamW's decoupled decay
--   set 100x too high) or a shrinking scale pulls the weights below it; or a threshold factor
--   set too high. One sign takes over when the latent weights drift together (an input that is
--   never centred, a bias-like pull from the loss).
-- fix: Make the threshold follow the weights' scale (TWN's 0.7 x mean |w|, or a learned
--   threshold as in TTQ) instead of a fixed number; lower the weight decay on the latent
--   weights (or exclude them from it); keep a per-layer (or per-channel) scale; check the
--   layer's inputs are normalized. A layer already collapsed rarely recovers: restart from a
--   checkpoint before it.
-- param zero_share = 0.9: share of the layer's weights at 0, at least, over the last quarter of
--   the logged histograms (median) and in the latest one
-- param sign_share = 0.05: or the smaller sign's share of the non-zero weights at most this (and
--   at least 4 times that in the first histogram: a layer that started balanced)
-- param zero_tol = 0.25: a bucket counts as 0 when it lies within this share of the
--   histogram's largest |value| of zero (the ternary values are 0 and +-a)
-- param min_points = 5: histograms of the layer, at least
-- param late_frac = 0.25: the share of the histograms, at the end, that is judged
--
-- Read from the histograms the run logs of its quantized (ternarized) weights, under any
-- bucketing: TensorFlow's and torch's add_histogram exponential buckets, W&B's 64 even bins.
-- A healthy ternary layer holds a third to two thirds of its weights at 0 and both signs
-- in similar numbers.
WITH h AS MATERIALIZED (
  SELECT series_id, tag, step, tw_hist_shares(buckets, min, max, :zero_tol) AS s,
         row_number() OVER (PARTITION BY series_id ORDER BY step) AS i,
         count(*) OVER (PARTITION BY series_id) AS n
  FROM role_histograms WHERE run_id = :run_id AND role = 'ternary_weights'
), pts AS MATERIALIZED (
  SELECT series_id, tag, step, i, n, json_extract(s, '$.zero') AS zero,
         CASE WHEN json_extract(s, '$.zero') < 0.99
              THEN min(json_extract(s, '$.negative'), json_extract(s, '$.positive')) / (1 - json_extract(s, '$.zero'))
         END AS minor,
         CASE WHEN json_extract(s, '$.negative') > json_extract(s, '$.positive') THEN 'negative' ELSE 'positive' END AS major
  FROM h WHERE s IS NOT NULL
), judged AS MATERIALIZED (
  SELECT series_id, tag, max(n) AS n, min(step) AS first_step, max(step) AS last_step,
         tw_median(CASE WHEN i > n * (1 - :late_frac) THEN zero END) AS late_zero,
         tw_median(CASE WHEN i > n * (1 - :late_frac) THEN minor END) AS late_minor,
         max(CASE WHEN i = n THEN zero END) AS last_zero, max(CASE WHEN i = n THEN minor END) AS last_minor,
         max(CASE WHEN i = n THEN major END) AS last_major,
         max(CASE WHEN i = 1 THEN zero END) AS first_zero, max(CASE WHEN i = 1 THEN minor END) AS first_minor
  FROM pts GROUP BY series_id
), kinds AS MATERIALIZED (
  SELECT judged.*,
         late_zero >= :zero_share AND last_zero >= :zero_share AS to_zero,
         late_minor <= :sign_share AND last_minor <= :sign_share AND first_minor >= 4 * :sign_share AS to_sign
  FROM judged WHERE n >= :min_points
)
SELECT series_id,
       (SELECT min(p.step) FROM pts p WHERE p.series_id = kinds.series_id AND
          CASE WHEN to_zero THEN p.zero >= :zero_share ELSE p.minor <= :sign_share END) AS onset_step,
       first_step, last_step,
       tag || ': ' ||
         CASE WHEN to_zero
              THEN printf('%.0f', 100 * last_zero) || '% of the layer''s ternary weights are 0 in its latest histogram (step ' ||
                   last_step || '; median ' || printf('%.0f', 100 * late_zero) || '% over the last quarter, ' ||
                   printf('%.0f', 100 * first_zero) || '% in the first at step ' || first_step ||
                   '): the layer has collapsed to zero and passes almost nothing'
              ELSE 'only ' || printf('%.1f', 100 * last_minor) || '% of the layer''s non-zero ternary weights are not ' ||
                   last_major || ' in its latest histogram (step ' || last_step || '; ' ||
                   printf('%.0f', 100 * first_minor) || '% in the first at step ' || first_step ||
                   '): the layer has collapsed to one sign' END AS message,
       json_object('series', tag, 'zero_share', last_zero, 'late_zero_share', late_zero, 'first_zero_share', first_zero,
                   'minor_sign_share', last_minor, 'first_minor_sign_share', first_minor, 'histograms', n,
                   'collapse', CASE WHEN to_zero THEN 'zero' ELSE 'sign' END) AS evidence
FROM kinds WHERE to_zero OR to_sign

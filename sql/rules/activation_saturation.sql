-- id: activation_saturation
-- title: Saturated activations: tanh/sigmoid units pinned at their limits
-- severity: warning
-- roles: act_saturation
-- inhibited_by: non_finite_loss
-- cause: Most of a layer's tanh or sigmoid outputs sit at the function's flat ends (+-1 for
--   tanh, 0 or 1 for a sigmoid), where its derivative is nearly 0: the gradient through those
--   units vanishes and the layer learns little or nothing. The usual causes: pre-activations far
--   too large, from an initialization scaled for another activation or for no fan-in at all
--   (weights of std 1 where 1/sqrt(fan_in) was meant), or from inputs that were never
--   standardized (raw pixel values 0-255, sensor readings in their physical units); later in a
--   run, a learning rate high enough to grow the weights without bound.
-- fix: Standardize the inputs (zero mean, unit variance per feature; pixels scaled to [0, 1] and
--   normalized); initialize with Xavier/Glorot (tanh, sigmoid) so pre-activations start near
--   unit scale; put a normalization layer (LayerNorm, BatchNorm) before the squashing function;
--   lower the learning rate or add weight decay if the weights grew; or use ReLU/GELU in hidden
--   layers and keep sigmoid for gates and outputs.
-- param frac = 0.5: share of the layer's outputs at their limits, at least, over the last
--   quarter of the run (median) and at the latest (median of the last tenth)
-- param min_points = 10: logged values of the series, at least
-- param late_frac = 0.25: the share of the run, at its end, that is judged
--
-- What counts as saturated is the run's own definition (|tanh| > 0.99, a sigmoid below 0.01 or
-- above 0.99 are common): this rule reads the share the run logs. A healthy tanh layer keeps a
-- few percent there, some more late in training as it grows confident; half the layer pinned,
-- still at the end, is a layer that has stopped passing gradient. Shares logged as
-- percentages (any value above 1) are read as such.
WITH raw AS MATERIALIZED (
  SELECT series_id, tag, step, value,
         max(value) OVER (PARTITION BY series_id) AS top,
         row_number() OVER (PARTITION BY series_id ORDER BY step) AS i,
         count(*) OVER (PARTITION BY series_id) AS n
  FROM role_points WHERE run_id = :run_id AND role = 'act_saturation' AND value_class = 0
), pts AS MATERIALIZED (
  SELECT series_id, tag, step, i, n, CASE WHEN top > 1 THEN value / 100.0 ELSE value END AS v FROM raw
), judged AS MATERIALIZED (
  SELECT series_id, tag, max(n) AS n, min(step) AS first_step, max(step) AS last_step,
         tw_ends(step, v, 1, 0.1) AS ends,
         tw_median(CASE WHEN i > n * (1 - :late_frac) THEN v END) AS late,
         min(CASE WHEN v >= :frac THEN step END) AS first_high
  FROM pts GROUP BY series_id
)
SELECT series_id, first_high AS onset_step, first_step, last_step,
       tag || ': ' || printf('%.0f', 100 * json_extract(ends, '$.end')) ||
         '% of the layer''s outputs are pinned at the activation''s limits at the latest (median ' ||
         printf('%.0f', 100 * late) || '% over the last quarter of the run; ' ||
         printf('%.0f', 100 * json_extract(ends, '$.start')) || '% over its first tenth' ||
         CASE WHEN first_high = first_step THEN ', saturated from the first logged step: pre-activations too large from the start'
              ELSE ', first at ' || printf('%.0f', 100 * :frac) || '% or more at step ' || first_high END ||
         '): the gradient through these units is nearly zero' AS message,
       json_object('series', tag, 'start', json_extract(ends, '$.start'), 'latest', json_extract(ends, '$.end'),
                   'late_median', late, 'first_high_step', first_high, 'points', n) AS evidence
FROM judged
WHERE n >= :min_points AND late >= :frac AND json_extract(ends, '$.end') >= :frac

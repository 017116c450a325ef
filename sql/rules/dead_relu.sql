-- id: dead_relu
-- title: Dead ReLUs: a layer's units stopped firing
-- severity: warning
-- roles_any: dead_units, act_zero_frac
-- inhibited_by: non_finite_loss
-- cause: A ReLU unit whose pre-activation is negative for every input outputs 0 and gets no
--   gradient, so nothing brings it back: it is dead, and the layer has lost that capacity for
--   good. Whole layers die from a learning rate too high for the first updates (one large step
--   pushes the weights or biases so far that no input turns the unit on again; SGD with a large
--   LR and no warmup, or a loss spike), or from an initialization that starts them dead (a large
--   negative bias, meant for an output's class prior, copied onto hidden layers; weights scaled
--   down to almost nothing with a negative bias).
-- fix: Lower the learning rate or add warmup (and gradient clipping) so the first steps stay
--   small; initialize hidden biases at 0 (or slightly positive) with He/Kaiming weights; put a
--   normalization layer (BatchNorm, LayerNorm) before the activation so pre-activations stay
--   centred; or use an activation whose negative side still passes gradient (LeakyReLU, GELU,
--   SiLU/ELU). Units that are already dead do not recover: restart from a checkpoint before they
--   died.
-- param dead_frac = 0.5: share of a layer's units that never fired over a batch, at least (a
--   dead_units series, such as act/relu_dead_frac/layer2 or dead_neurons_pct)
-- param zero_frac = 0.9: share of a layer's outputs that are zero, at least (an act_zero_frac
--   series, such as TF's fraction_of_zero_values, zero_fraction or sparsity; a healthy ReLU layer
--   sits near half)
-- param min_points = 10: logged values of the series, at least
-- param late_frac = 0.25: judged over this last share of the run: its median and its latest
--   values (median of the last tenth) both at or above the threshold
--
-- Two kinds of series say it. A dead-unit share counts the units that gave 0 for every example
-- of a batch: a healthy layer has few (Keras' DeadReluDetector warns at 10 %), and half the
-- layer dead is capacity lost whatever the loss says. A zero share counts zero outputs: a
-- healthy ReLU layer's is near 50 % (sparse but alive), so only 90 % and more says most units
-- are off for every input. Shares logged as percentages (any value above 1) are read as such.
-- A layer that only passed through a high share and recovered is not reported: it must stay
-- high over the last quarter of the run.
WITH raw AS MATERIALIZED (
  SELECT role, series_id, tag, step, value,
         max(value) OVER (PARTITION BY series_id) AS top,
         row_number() OVER (PARTITION BY series_id ORDER BY step) AS i,
         count(*) OVER (PARTITION BY series_id) AS n
  FROM role_points
  WHERE run_id = :run_id AND role IN ('dead_units', 'act_zero_frac') AND value_class = 0
), pts AS MATERIALIZED (
  SELECT role, series_id, tag, step, i, n, CASE WHEN top > 1 THEN value / 100.0 ELSE value END AS v,
         CASE role WHEN 'dead_units' THEN :dead_frac ELSE :zero_frac END AS thr
  FROM raw
), judged AS MATERIALIZED (
  SELECT role, series_id, tag, max(n) AS n, max(thr) AS thr, min(step) AS first_step, max(step) AS last_step,
         tw_ends(step, v, 1, 0.1) AS ends,
         tw_median(CASE WHEN i > n * (1 - :late_frac) THEN v END) AS late,
         min(CASE WHEN v >= thr THEN step END) AS first_high
  FROM pts GROUP BY series_id
)
SELECT series_id, first_high AS onset_step, first_step, last_step,
       tag || ': ' || printf('%.0f', 100 * json_extract(ends, '$.end')) ||
         CASE role WHEN 'dead_units' THEN '% of the layer''s units never fired over a batch'
                   ELSE '% of the layer''s outputs are zero' END ||
         ' at the latest (median ' || printf('%.0f', 100 * late) || '% over the last quarter of the run; ' ||
         printf('%.0f', 100 * json_extract(ends, '$.start')) || '% over its first tenth, first at ' ||
         printf('%.0f', 100 * thr) || '% or more at step ' || first_high || ')' ||
         CASE WHEN first_high = first_step
              THEN ': dead already at the first logged step (the initialization, or the very first updates), and still dead'
              ELSE ': the units died during training and do not come back' END AS message,
       json_object('series', tag, 'kind', role, 'start', json_extract(ends, '$.start'),
                   'latest', json_extract(ends, '$.end'), 'late_median', late, 'threshold', thr,
                   'first_high_step', first_high, 'points', n) AS evidence
FROM judged
WHERE n >= :min_points AND late >= thr AND json_extract(ends, '$.end') >= thr

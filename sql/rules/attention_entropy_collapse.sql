-- id: attention_entropy_collapse
-- title: Attention entropy collapsed: the heads attend to a single token
-- severity: warning
-- roles: attn_entropy
-- inhibited_by: non_finite_loss
-- cause: The attention distributions have become nearly one-hot: most heads put all their
--   weight on one key, whatever the query. In a transformer trained with a learning rate too
--   high for its start (no or too short warmup, Adam at full LR from step 1, post-LN without
--   warmup), the query and key weights grow fast, the attention logits grow with them and the
--   softmax saturates; the heads lock in early, their gradients vanish, and training tends to
--   stall or to spike later (the entropy collapse reported before loss spikes in large-model
--   training). A healthy model's attention sharpens too, but gradually and not in most heads
--   at once.
-- fix: Add (or lengthen) a learning-rate warmup and lower the peak LR; keep gradient clipping
--   on; prefer pre-LN blocks; bound the attention logits (QK-LayerNorm, a logit soft cap, or
--   reparametrizing the query/key weights as in sigmaReparam); check the 1/sqrt(d_head) scaling
--   of the scores is there; restart from a checkpoint before the collapse.
-- param low_frac = 0.2: a head's entropy fell to this share of its start, or below (it starts
--   near uniform, ln of the number of keys), over the last quarter of the run (median) and at
--   the latest (median of the last tenth)
-- param min_share = 0.5: this share of the run's entropy series collapsed, at least (a single
--   sharp head may be doing its job, as an induction or a positional head does)
-- param min_points = 10: logged values of a series, at least
-- param late_frac = 0.25: the share of the run, at its end, that is judged
--
-- The start is the highest of the first 5 % of a series' points (3 at least): attention is near
-- uniform at initialization and only sharpens from there, and a collapse without warmup can be
-- over within those first points (their median would already be collapsed). A run that logs
-- one entropy (the mean over heads, or over layers) collapses when that one does.
WITH pts AS MATERIALIZED (
  SELECT series_id, tag, step, value,
         row_number() OVER (PARTITION BY series_id ORDER BY step) AS i,
         count(*) OVER (PARTITION BY series_id) AS n
  FROM role_points WHERE run_id = :run_id AND role = 'attn_entropy' AND value_class = 0
), ends AS MATERIALIZED (
  SELECT series_id, tag, max(n) AS n, min(step) AS first_step, max(step) AS last_step,
         max(CASE WHEN i <= max(3, n * 0.05) THEN value END) AS start,
         json_extract(tw_ends(step, value, 1, 0.1), '$.end') AS latest,
         tw_median(CASE WHEN i > n * (1 - :late_frac) THEN value END) AS late
  FROM pts GROUP BY series_id
), heads AS MATERIALIZED (
  SELECT e.*, late <= :low_frac * start AND latest <= :low_frac * start AS collapsed,
         (SELECT min(p.step) FROM pts p WHERE p.series_id = e.series_id AND p.value <= :low_frac * e.start) AS low_step
  FROM ends e WHERE n >= :min_points AND start > 0
), summary AS MATERIALIZED (
  SELECT count(*) AS heads, sum(collapsed) AS collapsed, min(first_step) AS first_step, max(last_step) AS last_step,
         min(CASE WHEN collapsed THEN low_step END) AS onset,
         max(CASE WHEN collapsed THEN low_step END) AS last_onset
  FROM heads
), listed AS (
  SELECT group_concat(tag || ' ' || printf('%.3g', start) || ' -> ' || printf('%.3g', latest) ||
                      ' (below ' || printf('%.0f', 100 * :low_frac) || '% of its start from step ' || low_step || ')', '; ') AS heads_text
  FROM (SELECT * FROM heads WHERE collapsed ORDER BY latest / start LIMIT 3)
)
SELECT NULL AS series_id, onset AS onset_step, first_step, last_step,
       CASE WHEN heads = 1 THEN 'the attention entropy collapsed: '
            ELSE collapsed || ' of the ' || heads || ' attention entropies collapsed: ' END ||
         heads_text || CASE WHEN collapsed > 3 THEN '; ...' ELSE '' END ||
         ' (the run''s last step ' || last_step || ', the first collapse at ' ||
         printf('%.0f', 100.0 * (onset - first_step) / max(1, last_step - first_step)) ||
         '% of it): the heads attend to one key each and pass little gradient' AS message,
       json_object('heads', heads, 'collapsed', collapsed, 'first_collapse_step', onset,
                   'last_collapse_step', last_onset) AS evidence
FROM summary, listed
WHERE collapsed >= 1 AND collapsed >= :min_share * heads

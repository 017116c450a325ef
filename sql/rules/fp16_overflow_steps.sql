-- id: fp16_overflow_steps
-- title: Many optimizer steps are skipped for float16 overflow
-- severity: warning
-- roles: overflow_steps
-- cause: With dynamic loss scaling (GradScaler, DeepSpeed, apex, Megatron-LM), a step whose
--   scaled gradients overflow float16 (inf or NaN) is skipped and the scale halved. A few skips
--   while the scale calibrates, and one now and then after, are how it works; a steady share
--   means the gradients overflow at any scale the scaler can keep: an op that overflows in
--   float16 itself (a norm or softmax without an epsilon, large logits, a sum over many
--   elements), inputs not normalized, or a learning rate that drives activations up. Every
--   skipped step is a batch the model never learns from, and the loss scale sinks with them.
-- fix: Find the op that overflows (torch.autograd.detect_anomaly, or a hook that logs which
--   gradients are not finite); run it in float32 (autocast(enabled=False) around it), add an
--   epsilon, normalize the inputs, lower the learning rate; or train in bfloat16, which has
--   float32's range and needs no loss scaling.
-- param max_share = 0.02: skipped steps per training step over the stretch that ends now, at
--   most (GradScaler grows its scale after 2000 clean steps: a healthy run skips far fewer)
-- param min_skipped = 5: skipped steps in that stretch, at least
-- param min_points = 5: points of the series, at least
-- param warmup = 0.05: the first part of the run (the scale calibrating) is not judged
--
-- Three ways to log skips, told apart by the values: a running count (it never falls: a
-- trainer's skipped_steps), a count per logging interval (Megatron-LM's skipped iterations
-- since the last log), or a 0/1 flag for the step logged (an overflow boolean). Each becomes a
-- running count of skipped steps (a flag stands for the steps since the point before it), and
-- the stretch that ends now is the one with the most skips in excess of max_share per step
-- (its share is then max_share or more); the onset is its first skip.
WITH pts AS (
  SELECT series_id, tag, step, value FROM role_points
  WHERE run_id = :run_id AND role = 'overflow_steps' AND value_class = 0 AND value >= 0
), s AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, min(step) AS lo, max(step) AS hi,
         sum(CASE WHEN value IN (0, 1) THEN 0 ELSE 1 END) AS non_flag,
         (SELECT count(*) FROM (SELECT value - lag(value) OVER (ORDER BY step) AS d FROM pts q
                                WHERE q.series_id = pts.series_id) WHERE d < 0) AS falls,
         max(value) > min(value) AS moves
  FROM pts GROUP BY series_id HAVING count(*) >= :min_points
), shaped AS MATERIALIZED (
  SELECT s.*, CASE WHEN falls = 0 AND moves AND non_flag > 0 THEN 'count' WHEN non_flag = 0 THEN 'flag'
                   ELSE 'interval' END AS form
  FROM s
), running AS MATERIALIZED (
  -- c: skipped steps up to and including each point.
  SELECT p.series_id, p.step, sh.form,
         CASE sh.form WHEN 'count' THEN p.value
              WHEN 'interval' THEN sum(p.value) OVER (PARTITION BY p.series_id ORDER BY p.step)
              ELSE sum(p.value * (p.step - COALESCE(lag_step, p.step - 1))) OVER (PARTITION BY p.series_id ORDER BY p.step)
         END AS c
  FROM (SELECT pts.*, lag(step) OVER (PARTITION BY series_id ORDER BY step) AS lag_step FROM pts) p
  JOIN shaped sh USING (series_id)
), latest AS MATERIALIZED (
  SELECT sh.*, (SELECT c FROM running r WHERE r.series_id = sh.series_id ORDER BY step DESC LIMIT 1) AS c_hi,
         (SELECT c FROM running r WHERE r.series_id = sh.series_id ORDER BY step LIMIT 1) AS c_lo
  FROM shaped sh
), excess AS MATERIALIZED (
  -- Where the stretch starts: the point (after the warmup) that maximizes the skips to now in
  -- excess of max_share per step. A rare skip in a clean stretch before it costs more steps
  -- than it brings, so the start lands where the rate went up (a CUSUM), not at an early skip.
  SELECT r.series_id, r.step, row_number() OVER (PARTITION BY r.series_id
           ORDER BY (l.c_hi - r.c) - :max_share * (l.hi - r.step) DESC, r.step) AS rank
  FROM running r JOIN latest l USING (series_id)
  WHERE r.step >= l.lo + :warmup * (l.hi - l.lo) AND r.step < l.hi
), stretch AS MATERIALIZED (
  SELECT l.*, (SELECT step FROM excess e WHERE e.series_id = l.series_id AND e.rank = 1) AS since
  FROM latest l
), judged AS (
  SELECT st.*, st.c_hi - (SELECT c FROM running r WHERE r.series_id = st.series_id AND r.step = st.since) AS skipped,
         -- The onset: the first point after the stretch's start whose count went up (a stretch
         -- measured from the warmup's end may hold a long clean start).
         (SELECT min(r.step) FROM running r WHERE r.series_id = st.series_id AND r.step > st.since
            AND r.c > (SELECT c FROM running q WHERE q.series_id = st.series_id AND q.step = st.since)) AS onset
  FROM stretch st WHERE since IS NOT NULL
    AND st.c_hi - (SELECT c FROM running r WHERE r.series_id = st.series_id AND r.step = st.since)
        >= :max_share * (st.hi - st.since)
)
SELECT series_id, onset AS onset_step, since AS first_step, hi AS last_step,
       tag || ': ' || printf('%.0f', skipped) || ' of the ' || (hi - since) || ' steps from ' || since || ' to ' || hi ||
         ' were skipped for overflow (' || printf('%.1f', 100.0 * skipped / (hi - since)) || '%; ' ||
         printf('%.0f', c_hi - c_lo) || ' in all, ' ||
         CASE form WHEN 'count' THEN 'a running count' WHEN 'interval' THEN 'counted per logging interval'
                   ELSE 'a flag per logged step' END ||
         '): the gradients overflow float16 at any loss scale the scaler keeps' AS message,
       json_object('series', tag, 'form', form, 'since_step', since, 'skipped', skipped, 'steps', hi - since,
                   'share', 1.0 * skipped / (hi - since), 'total_skipped', c_hi - c_lo) AS evidence
FROM judged WHERE skipped >= :min_skipped

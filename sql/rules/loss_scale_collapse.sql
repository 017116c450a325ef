-- id: loss_scale_collapse
-- title: Mixed precision: the loss scale keeps halving
-- severity: warning
-- roles: loss_scale
-- inhibited_by: non_finite_loss
-- cause: Gradients come out infinite or NaN again and again. A dynamic loss scaler
--   (torch.cuda.amp.GradScaler, DeepSpeed, Apex, fairseq) halves its scale and skips the
--   optimizer step at each such step, and doubles it again only after a long run of clean steps
--   (2,000 by default), so a scale that keeps falling means overflow is not a rare event but part
--   of every few batches, and each of those batches is thrown away. The usual causes: an
--   operation whose backward is infinite at a point the data reaches (sqrt or norm of an all-zero
--   vector, such as a padding row; log of 0; division by a tiny number), activations or logits
--   beyond float16's range (65,504: unnormalized inputs, attention logits without scaling), or a
--   loss summed instead of averaged. A scale below 1 means the gradients overflow float16 even
--   unscaled.
-- fix: Find the first non-finite gradient (torch.autograd.detect_anomaly on a failing batch, or
--   a hook per parameter printing which grad is not finite); add an epsilon inside sqrt, norm,
--   log and divisions, mask padding before any norm; keep the loss and softmax in float32
--   (autocast does so for the ops it knows); normalize the inputs; or train in bfloat16, which
--   has float32's range and needs no loss scaling.
-- param min_points = 10: logged scale values, at least
-- param skip_frac = 0.1: the scale's calibration at the start (it falls from its initial 2^16
--   to the level the gradients allow within the first steps) is left out: judged from this share
--   of the points on
-- param min_halvings = 8: the scale fell by at least 2^this (256x) over the judged stretch
-- param min_falls = 5: and fell at this many logged points of it, at least (a steady decline,
--   not one drop)
-- param min_scale = 1: or its latest values are below this (float16 overflows even unscaled)
--
-- A healthy scaler settles: after its first steps it halves now and then and grows back, and
-- its level over the run stays within a few powers of two. "Keeps halving" is a net fall of 2^8
-- or more after that first calibration, made of many falls. The count of falls between logged
-- points is a lower bound on the skipped (overflow) steps: a scale logged every N steps hides
-- the halvings and regrowths in between.
WITH pts AS MATERIALIZED (
  SELECT series_id, tag, step, value,
         row_number() OVER (PARTITION BY series_id ORDER BY step) AS i,
         count(*) OVER (PARTITION BY series_id) AS n,
         lag(value) OVER (PARTITION BY series_id ORDER BY step) AS prev
  FROM role_points WHERE run_id = :run_id AND role = 'loss_scale' AND value_class = 0
), judged AS MATERIALIZED (
  -- The stretch after the calibration: its first value, its latest (median of its last tenth),
  -- and its falls.
  SELECT series_id, tag, max(n) AS n, min(step) AS from_step, max(step) AS last_step,
         (SELECT p.value FROM pts p WHERE p.series_id = pts.series_id AND p.i = CAST(pts.n * :skip_frac AS INTEGER) + 1) AS start,
         tw_ends(step, value, 1, 0.1) AS ends,
         sum(value < prev) AS falls, sum(value > prev) AS rises
  FROM pts WHERE i > CAST(n * :skip_frac AS INTEGER) GROUP BY series_id
), scored AS MATERIALIZED (
  SELECT judged.*, json_extract(ends, '$.end') AS latest, n - CAST(n * :skip_frac AS INTEGER) AS judged_n,
         (SELECT max(p.value) FROM pts p WHERE p.series_id = judged.series_id) AS peak,
         CASE WHEN json_extract(ends, '$.end') > 0 AND start > 0 THEN ln(start / json_extract(ends, '$.end')) / ln(2) END AS halvings,
         (SELECT min(value) FROM pts p WHERE p.series_id = judged.series_id) AS lowest,
         (SELECT p.value FROM pts p WHERE p.series_id = judged.series_id AND p.i = 1) AS initial
  FROM judged
), peaked AS MATERIALIZED (
  -- The onset: the last time the scale stood at its peak; it has been below since.
  SELECT scored.*, (SELECT max(p.step) FROM pts p WHERE p.series_id = scored.series_id AND p.value >= scored.peak) AS peak_step
  FROM scored
)
SELECT series_id, peak_step AS onset_step, from_step AS first_step, last_step,
       tag || ' fell from ' || printf('%.4g', peak) || ' (step ' || peak_step || ') to ' || printf('%.4g', latest) ||
         ' by step ' || last_step ||
         CASE WHEN latest = 0 OR (halvings >= :min_halvings AND falls >= :min_falls)
              THEN CASE WHEN latest = 0 THEN ' (halved past the smallest float: every step is skipped now)'
                        ELSE ', ' || printf('%.0f', halvings) || ' halvings net since its first calibration' END ||
                   ', falling at ' || falls || ' of the ' || judged_n || ' logged points since and rising at ' || rises ||
                   ': gradients are infinite or NaN every few steps, and each of those steps is skipped'
              ELSE ' and stays below ' || printf('%g', :min_scale) || ' (its lowest ' || printf('%.4g', lowest) ||
                   '): the gradients overflow float16 even unscaled' END AS message,
       json_object('series', tag, 'initial', initial, 'start', start, 'latest', latest, 'lowest', lowest,
                   'halvings', halvings, 'falls', falls, 'rises', rises, 'points', n,
                   'peak_step', peak_step) AS evidence
FROM peaked
WHERE n >= :min_points
  AND ((halvings >= :min_halvings AND falls >= :min_falls) OR latest < :min_scale)

-- id: loss_spikes
-- title: Loss spikes that recur or do not recover
-- severity: warning
-- roles_any: train_loss, val_loss, gan_loss
-- inhibited_by: non_finite_loss, loss_constant
-- cause: Bad batches (corrupt or extreme examples, a data shard with a different scale) or an
--   optimizer on the edge of stability: a learning rate too high for the current loss
--   sharpness, Adam's epsilon too small, attention logits growing.
-- fix: Log the indices of the batches at the spike steps and inspect them; lower the peak LR
--   (or lengthen warmup), clip gradients (max norm 1.0), and for transformers consider QK-norm
--   or a larger Adam epsilon. Spikes that do not recover: resume from before the first one.
-- param window = 100: trailing window of the robust z, in points
-- param z = 7: modified z (median/MAD of log-loss; the MAD at most the point-to-point noise) that
--   makes a point a spike
-- param min_ratio = 1.5: a spike must also be this many times the running level
-- param recover_points = 50: points after a spike within which it must come back
-- param recover_ratio = 1.25: come back means the median of those points is within this factor
--   of the level before the spike (or within that median's noise)
-- param min_count = 3: spikes of at least big_ratio worth mentioning (as information, when they
--   all recovered: isolated spikes that recover are normal, however tall)
-- param big_ratio = 3: how big those must be
-- param many = 5: this many spikes of at least min_ratio are recurring: a warning
-- param max_width = 5: a raised stretch longer than this many points, flat-topped and back
--   down after, is a block, not a spike: a noisy part of every epoch, a bad shard read in one
--   piece (epoch_boundary_jumps, loss_oscillation)
-- param block_top_share = 0.5: flat-topped: its middle point at least this share of the peak's
--   rise (a spike that decays over a few points has its middle far below its peak)
-- param warmup_frac = 0.05: the first part of the run is ignored (warmup is noisy by nature)
-- param frequent_ratio = 10: in a short series, a rise this large over the lowest points of its
--   sides is measured from them against the noise of the points not raised at all, where those
--   are much calmer than the whole: spikes on every fourth point spoil a median-based noise
--   estimate, and a spike half gone at the next point lifts its neighbours' medians (only
--   large rises, since heavy-tailed minibatch noise would lose its own tail the same way)
-- param short_k = 2: a series of fewer than 2 x window points (an epoch or an evaluation
--   per point, as in 20 epochs or 21 evaluations) is judged point by point against this many
--   points on each side, in units of its own point-to-point noise (tw_local_spikes): a trailing window would
--   hold too few points, or mostly the curve's own descent
--
-- Isolated spikes that recover are normal (especially early): 2-3x ones stay quiet, a few tall
-- ones are information (look at those batches). A warning is for recurring spikes (many), or
-- for one that left the loss at a higher level.
--
-- Averaged points: a validation loss (each point is the whole validation set) and a short
-- series (an epoch per point) average over many batches, so one bad batch cannot make a spike
-- there: one spike in them is the model itself knocked off course (the weights, not the data),
-- and is information even alone. The validation loss is read too (train_loss and val_loss).
--
-- A GAN's players' losses (role gan_loss: no loss the run drives down, so no other rule reads
-- them) are read too, always against both sides (their level wanders with the players' balance)
-- and, like averaged points, one spike is information: the balance broke (a discriminator loss
-- 35x up for one step, then D(x) at 0.999: the discriminator took over).
--
-- An RL run whose return is still climbing (run_returns_rising): its value or TD loss steps up
-- with the returns it predicts, so a step that does not come back is information there.
--
-- Divergence does not mute spikes: a spike is judged against the curve's local level, so a
-- steady rise is none; spikes on a run that also diverges are events of their own (the
-- instability shows as jumps before the level gives way).
WITH span AS (
  SELECT min(step) AS lo, max(step) AS hi FROM role_points
  WHERE run_id = :run_id AND role IN ('train_loss', 'gan_loss')
), sized AS MATERIALIZED (
  -- Long series: the trailing window; short ones (fewer than 2 x window points) and a GAN's
  -- losses: both sides.
  SELECT series_id, count(*) < 2 * :window OR min(role) = 'gan_loss' AS short
  FROM role_points WHERE run_id = :run_id AND role IN ('train_loss', 'val_loss', 'gan_loss') AND value_class = 0
  GROUP BY series_id
), pts AS (
  SELECT series_id, tag, role, short, step, value
  FROM role_points JOIN sized USING (series_id), span
  WHERE run_id = :run_id AND role IN ('train_loss', 'val_loss', 'gan_loss') AND value_class = 0
    AND step >= span.lo + :warmup_frac * (span.hi - span.lo)
), s AS MATERIALIZED (
  -- Each series through one detector (an aggregate inside a CASE would still see every row).
  SELECT series_id, tag, role, short, 2 * :short_k AS w,
         tw_local_spikes(step, value, :short_k, :z, :min_ratio, :recover_ratio, :frequent_ratio) AS j
  FROM pts WHERE short GROUP BY series_id
  UNION ALL
  SELECT series_id, tag, role, short, :window AS w,
         tw_spikes(step, value, :window, :z, :recover_points, :recover_ratio) AS j
  FROM pts WHERE NOT short GROUP BY series_id
), big AS MATERIALIZED (
  SELECT s.series_id, s.tag, s.w, s.short, s.role AS role,
         s.role IN ('val_loss', 'gan_loss') OR s.short AS averaged, count(*) AS n,
         sum(json_extract(e.value, '$.recovered') = 0) AS unrecovered,
         sum(json_extract(e.value, '$.ratio') >= :big_ratio) AS big,
         min(json_extract(e.value, '$.step')) AS first_step,
         max(json_extract(e.value, '$.step')) AS last_step,
         max(json_extract(e.value, '$.ratio')) AS max_ratio,
         max(json_extract(e.value, '$.z')) AS max_z,
         json_group_array(json(e.value)) AS spikes
  FROM s, json_each(s.j, '$.spikes') e
  WHERE json_extract(e.value, '$.ratio') >= :min_ratio
    AND NOT (COALESCE(json_extract(e.value, '$.width'), 1) > :max_width AND json_extract(e.value, '$.top_share') >= :block_top_share
             AND json_extract(e.value, '$.recovered') = 1)
  GROUP BY s.series_id
)
SELECT series_id, first_step AS onset_step, first_step, last_step,
       CASE WHEN n >= :many OR unrecovered > 0 AND NOT rl THEN 'warning' ELSE 'info' END AS severity,
       tag || ': ' || n || ' spike' || CASE WHEN n > 1 THEN 's' ELSE '' END ||
         CASE WHEN n > 1 THEN ' between steps ' || first_step || ' and ' || last_step ELSE ' at step ' || first_step END ||
         ' (up to ' || printf('%.1f', max_ratio) || 'x the ' ||
         CASE WHEN short THEN 'level on both sides, ' || printf('%.0f', max_z) || ' times its point-to-point noise'
              ELSE 'running level, robust z up to ' || printf('%.0f', max_z) END || ')' ||
         CASE WHEN unrecovered > 0 THEN '; ' || unrecovered || ' did not come back within ' ||
              CAST(CASE WHEN short THEN :short_k ELSE :recover_points END AS INTEGER) || ' points' ELSE '' END ||
         CASE WHEN rl AND unrecovered > 0 AND n < :many
              THEN '; the episode return is still climbing, and an RL loss (value, TD) steps up with the returns it predicts'
              WHEN role = 'gan_loss' AND n < :many AND unrecovered = 0
              THEN '; in a GAN player''s loss a spike is the balance between the players breaking (look at ' ||
                   'D(x) and D(G(z)) there: one player took over)'
              WHEN averaged AND n < :many AND unrecovered = 0
              THEN '; in a validation loss or a short run (a point per epoch averages many batches) one spike is ' ||
                   'worth a look: the model itself may have been knocked off course, not just fed one bad batch'
              ELSE '' END AS message,
       json_object('series', tag, 'spikes', json(spikes), 'count', n, 'unrecovered', unrecovered,
                   'window', w, 'z_threshold', :z, 'method', CASE WHEN short THEN 'local' ELSE 'trailing' END) AS evidence
FROM (SELECT big.*, EXISTS (SELECT 1 FROM run_returns_rising WHERE run_id = :run_id) AS rl FROM big) big
WHERE big >= :min_count OR n >= :many OR unrecovered > 0 OR averaged

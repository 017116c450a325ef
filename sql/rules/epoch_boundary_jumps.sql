-- id: epoch_boundary_jumps
-- title: Loss jumps at epoch boundaries
-- severity: warning
-- roles: train_loss, epoch
-- inhibited_by: non_finite_loss, loss_divergence
-- cause: The data order repeats every epoch: shuffling is off (shuffle=False, an IterableDataset
--   read in file order), DistributedSampler.set_epoch() is not called so every epoch sees the
--   same permutation, or the data is sorted (by class, length, source) so the start of each
--   epoch is unlike its end.
-- fix: Shuffle the training data each epoch (DataLoader(shuffle=True); with DistributedSampler
--   call sampler.set_epoch(epoch) before each epoch); for streaming data, shuffle shards and
--   use a shuffle buffer.
-- param window_frac = 0.1: points on each side of a boundary, as a fraction of an epoch
-- param z = 3: jump, in robust standard deviations of the points around it
-- param min_consecutive = 2: boundaries in a row with an upward jump
WITH ep AS (
  SELECT step, value, lag(value) OVER (ORDER BY step) AS prev FROM role_points
  WHERE run_id = :run_id AND role = 'epoch' AND value_class = 0
), bounds AS (
  SELECT json_group_array(step) AS steps, count(*) AS n FROM ep
  WHERE prev IS NOT NULL AND CAST(value AS INTEGER) > CAST(prev AS INTEGER)
), loss AS (
  SELECT series_id, tag, step, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
), per AS (
  SELECT series_id, tag, count(*) AS n, bounds.n AS epochs, bounds.steps AS steps FROM loss, bounds
  WHERE bounds.n >= :min_consecutive GROUP BY series_id
), j AS (
  SELECT per.*, max(3, CAST(:window_frac * n / (epochs + 1) AS INTEGER)) AS w,
         (SELECT tw_boundary_jumps(l.step, l.value, per.steps, max(3, CAST(:window_frac * per.n / (per.epochs + 1) AS INTEGER)), :z)
            FROM loss l WHERE l.series_id = per.series_id) AS r
  FROM per
)
SELECT series_id, json_extract(r, '$.first_up_step') AS onset_step, json_extract(r, '$.first_up_step') AS first_step,
       json_extract(r, '$.last_up_step') AS last_step,
       tag || ' jumps up right after ' || json_extract(r, '$.up') || ' of ' || json_extract(r, '$.evaluated') ||
         ' epoch boundaries (' || json_extract(r, '$.max_consecutive_up') || ' in a row; compared ' || w ||
         ' points on each side)' AS message,
       json_object('series', tag, 'boundaries', json_extract(r, '$.boundaries'), 'evaluated', json_extract(r, '$.evaluated'),
                   'up', json_extract(r, '$.up'), 'max_consecutive_up', json_extract(r, '$.max_consecutive_up'),
                   'jumps', json(json_extract(r, '$.jumps')), 'window_points', w) AS evidence
FROM j
WHERE json_extract(r, '$.max_consecutive_up') >= :min_consecutive
  AND json_extract(r, '$.up') >= 0.5 * json_extract(r, '$.evaluated')

-- id: epoch_boundary_jumps
-- title: Loss jumps at epoch boundaries
-- severity: warning
-- roles: train_loss
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
-- param min_period = 10: without an epoch tag, the shortest period (in points) looked for
-- param max_period = 5000: and the longest
--
-- Epoch boundaries come from an epoch tag (where its integer part increases); without one,
-- from the loss curve's own dominant period and phase (a periodogram of its differences).
WITH ep AS (
  SELECT step, value, lag(value) OVER (ORDER BY step) AS prev FROM role_points
  WHERE run_id = :run_id AND role = 'epoch' AND value_class = 0
), tagged AS (
  SELECT json_group_array(step) AS steps, count(*) AS n FROM ep
  WHERE prev IS NOT NULL AND CAST(value AS INTEGER) > CAST(prev AS INTEGER)
), loss AS (
  SELECT series_id, tag, step, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
), period AS (
  SELECT max(step) AS hi, json_extract(p, '$.period_steps') AS len, json_extract(p, '$.phase_step') AS phase
  FROM (SELECT max(step) AS step, tw_period(step, value, :min_period, :max_period) AS p FROM loss)
  WHERE (SELECT n FROM tagged) = 0 AND json_extract(p, '$.period_points') > 0
), gen(s) AS (
  SELECT phase FROM period
  UNION ALL SELECT s + (SELECT len FROM period) FROM gen WHERE s + (SELECT len FROM period) <= (SELECT hi FROM period)
), bounds AS (
  SELECT CASE WHEN tagged.n > 0 THEN tagged.steps
              ELSE (SELECT json_group_array(CAST(round(s) AS INTEGER)) FROM gen) END AS steps,
         CASE WHEN tagged.n > 0 THEN tagged.n ELSE (SELECT count(*) FROM gen) END AS n,
         tagged.n > 0 AS from_tag
  FROM tagged
), per AS (
  SELECT series_id, tag, count(*) AS n, bounds.n AS epochs, bounds.steps AS steps, bounds.from_tag FROM loss, bounds
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
         ' points on each side' || CASE WHEN from_tag THEN '' ELSE '; epochs inferred from the curve''s period, ' ||
         CAST(json_extract(steps, '$[1]') - json_extract(steps, '$[0]') AS INTEGER) || ' steps' END || ')' AS message,
       json_object('series', tag, 'boundaries', json_extract(r, '$.boundaries'), 'evaluated', json_extract(r, '$.evaluated'),
                   'up', json_extract(r, '$.up'), 'max_consecutive_up', json_extract(r, '$.max_consecutive_up'),
                   'jumps', json(json_extract(r, '$.jumps')), 'window_points', w) AS evidence
FROM j
WHERE json_extract(r, '$.max_consecutive_up') >= :min_consecutive
  AND json_extract(r, '$.up') >= 0.5 * json_extract(r, '$.evaluated')

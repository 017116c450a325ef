-- id: epoch_boundary_jumps
-- title: Loss jumps (or drops) at epoch boundaries
-- severity: warning
-- roles: train_loss
-- inhibited_by: non_finite_loss, loss_divergence
-- cause: The data order repeats every epoch: shuffling is off (shuffle=False, an IterableDataset
--   read in file order), DistributedSampler.set_epoch() is not called so every epoch sees the
--   same permutation, or the data is sorted (by class, length, difficulty, source) so the
--   start of each epoch is unlike its end: the loss then jumps up (or, with the hardest data
--   last, drops) every time the order starts over.
-- fix: Shuffle the training data each epoch (DataLoader(shuffle=True); with DistributedSampler
--   call sampler.set_epoch(epoch) before each epoch); for streaming data, shuffle shards and
--   use a shuffle buffer.
-- param window_frac = 0.35: points on each side of a boundary, as a fraction of an epoch
-- param z = 2.5: jump, in standard errors of the difference between lines fitted either side
-- param min_consecutive = 2: boundaries in a row with a jump the same way
-- param control_ratio = 2.5: the median |z| at boundaries over that at mid-epoch points, at least
--   (a trend shifts every window alike; only an epoch effect singles out the boundaries)
-- param folded_z = 6: or, too noisy to see one boundary at a time: the epochs folded together,
--   the first fifth of an epoch against its last fifth, in standard errors (with the control,
--   half an epoch later, control_ratio times smaller, and the shifts at the boundaries the
--   same way min_consecutive times in a row)
-- param min_effect = 0.05: and the folded difference at least this much of the loss (relative)
-- param min_rise = 0.1: a loss that drops at boundaries must rise within its epochs: the median
--   over whole epochs of ln(second half's median / first half's) at least this (a healthy epoch
--   ends no higher than it began; 10 % leaves room for the noise of half-epoch medians)
-- param min_period = 10: without an epoch tag, the shortest period (in points) looked for
-- param max_period = 5000: and the longest
--
-- A drop at every boundary has two readings. Data in a fixed order makes a sawtooth: the loss
-- climbs through each epoch (easy data first, or one source after another) and falls back when
-- the order starts over. A model that memorises a training set it sees for the second time makes
-- a staircase: it drops at each new epoch and then holds or keeps falling, which is how healthy
-- multi-epoch training looks. Only the sawtooth is this finding.
--
-- Epoch boundaries come from an epoch tag (where its integer part increases); without one,
-- from the loss curve's own dominant period and phase (a periodogram of its differences).
WITH ep AS (
  SELECT step, value, lag(value) OVER (ORDER BY step) AS prev FROM role_points
  WHERE run_id = :run_id AND role = 'epoch' AND value_class = 0
), tagged AS MATERIALIZED (
  SELECT json_group_array(step) AS steps, count(*) AS n FROM ep
  WHERE prev IS NOT NULL AND CAST(value AS INTEGER) > CAST(prev AS INTEGER)
), loss AS (
  SELECT series_id, tag, step, value FROM role_points
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
), period AS MATERIALIZED (
  SELECT max(step) AS hi, json_extract(p, '$.period_steps') AS len, json_extract(p, '$.phase_step') AS phase
  FROM (SELECT max(step) AS step, tw_period(step, value, :min_period, :max_period) AS p FROM loss)
  WHERE (SELECT n FROM tagged) = 0 AND json_extract(p, '$.period_points') > 0
), gen(s) AS (
  SELECT phase FROM period
  UNION ALL SELECT s + (SELECT len FROM period) FROM gen WHERE s + (SELECT len FROM period) <= (SELECT hi FROM period)
), bounds AS MATERIALIZED (
  SELECT CASE WHEN tagged.n > 0 THEN tagged.steps
              ELSE (SELECT json_group_array(CAST(round(s) AS INTEGER)) FROM gen) END AS steps,
         CASE WHEN tagged.n > 0 THEN tagged.n ELSE (SELECT count(*) FROM gen) END AS n,
         tagged.n > 0 AS from_tag
  FROM tagged
), per AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, bounds.n AS epochs, bounds.steps AS steps, bounds.from_tag,
         max(3, CAST(:window_frac * count(*) / (bounds.n + 1) AS INTEGER)) AS w
  FROM loss, bounds
  WHERE bounds.n >= :min_consecutive GROUP BY series_id
), epochs AS (
  -- Whole epochs, between consecutive boundaries.
  SELECT per.series_id, CAST(a.value AS REAL) AS lo, CAST(b.value AS REAL) AS hi
  FROM per, json_each(per.steps) a, json_each(per.steps) b WHERE b.key = a.key + 1
), halves AS MATERIALIZED (
  SELECT e.series_id,
         (SELECT tw_median(l.value) FROM loss l WHERE l.series_id = e.series_id AND l.step >= e.lo
            AND l.step < (e.lo + e.hi) / 2.0) AS first_half,
         (SELECT tw_median(l.value) FROM loss l WHERE l.series_id = e.series_id AND l.step >= (e.lo + e.hi) / 2.0
            AND l.step < e.hi) AS second_half
  FROM epochs e
), within AS MATERIALIZED (
  SELECT series_id, tw_median(ln(second_half / first_half)) AS rise FROM halves
  WHERE first_half > 0 AND second_half > 0 GROUP BY series_id
), j AS MATERIALIZED (
  SELECT per.*, (SELECT tw_boundary_jumps(l.step, l.value, per.steps, per.w, :z)
                   FROM loss l WHERE l.series_id = per.series_id) AS r,
         (SELECT rise FROM within WHERE within.series_id = per.series_id) AS rise
  FROM per
), seen AS (
  -- One boundary at a time: jumps beyond z, in a row, singled out against mid-epoch controls.
  SELECT j.*, json_extract(r, '$.boundary_median_abs_z') >=
                :control_ratio * max(1, COALESCE(json_extract(r, '$.control_median_abs_z'), 0)) AS singled_out,
         -- All epochs folded together (noisy curves).
         COALESCE(abs(json_extract(r, '$.folded_z')) >= :folded_z
                  AND abs(json_extract(r, '$.folded_z')) >= :control_ratio * abs(json_extract(r, '$.folded_control_z'))
                  AND abs(json_extract(r, '$.folded_effect')) >= :min_effect, 0) AS folded
  FROM j
), dir AS (
  SELECT seen.*,
         (singled_out AND json_extract(r, '$.max_consecutive_up') >= :min_consecutive
            AND json_extract(r, '$.up') >= 0.5 * json_extract(r, '$.evaluated')) AS up_one_by_one,
         (singled_out AND json_extract(r, '$.max_consecutive_down') >= :min_consecutive
            AND json_extract(r, '$.down') >= 0.5 * json_extract(r, '$.evaluated')) AS down_one_by_one,
         (folded AND json_extract(r, '$.folded_z') > 0 AND json_extract(r, '$.max_same_sign_up') >= :min_consecutive) AS up_folded,
         (folded AND json_extract(r, '$.folded_z') < 0 AND json_extract(r, '$.max_same_sign_down') >= :min_consecutive) AS down_folded
  FROM seen
), judged AS (
  SELECT dir.*, up_one_by_one OR (up_folded AND NOT down_one_by_one) AS is_up,
         (down_one_by_one OR (down_folded AND NOT up_one_by_one)) AND COALESCE(rise, 1) >= :min_rise AS is_down,
         (up_one_by_one OR down_one_by_one) AS one_by_one
  FROM dir
), placed AS (
  -- The onset: a data-order bug is there from the first epoch, so when (nearly) every boundary
  -- shows it, or the folded epochs do, it is the first boundary (the steep early descent often
  -- hides the first jump); else the first boundary that jumped.
  SELECT judged.*,
         CASE WHEN NOT one_by_one OR (is_up AND up_folded) OR (is_down AND down_folded)
                OR json_extract(r, CASE WHEN is_up THEN '$.up' ELSE '$.down' END) >= json_extract(r, '$.evaluated') - 1
              THEN json_extract(r, '$.first_boundary')
              ELSE json_extract(r, CASE WHEN is_up THEN '$.first_up_step' ELSE '$.first_down_step' END) END AS onset
  FROM judged WHERE is_up OR is_down
)
SELECT series_id, onset AS onset_step, onset AS first_step,
       COALESCE(json_extract(r, CASE WHEN is_up THEN '$.last_up_step' ELSE '$.last_down_step' END),
                json_extract(steps, '$[#-1]')) AS last_step,
       CASE WHEN one_by_one THEN
       tag || CASE WHEN is_up THEN ' jumps up' ELSE ' drops' END || ' right after ' ||
         json_extract(r, CASE WHEN is_up THEN '$.up' ELSE '$.down' END) || ' of ' || json_extract(r, '$.evaluated') ||
         ' epoch boundaries (' || json_extract(r, CASE WHEN is_up THEN '$.max_consecutive_up' ELSE '$.max_consecutive_down' END) ||
         ' in a row; median |z| ' || printf('%.1f', json_extract(r, '$.boundary_median_abs_z')) || ' at boundaries against ' ||
         printf('%.1f', COALESCE(json_extract(r, '$.control_median_abs_z'), 0)) || ' mid-epoch; ' || w ||
         ' points each side'
       ELSE
       tag || ' sits ' || printf('%.0f', 100 * abs(json_extract(r, '$.folded_effect'))) || '% ' ||
         CASE WHEN is_up THEN 'higher' ELSE 'lower' END || ' just after epoch boundaries than just before them, ' ||
         'over all ' || epochs || ' boundaries folded together (z ' || printf('%.1f', json_extract(r, '$.folded_z')) ||
         ' against ' || printf('%.1f', json_extract(r, '$.folded_control_z')) || ' mid-epoch; too noisy to see at one boundary, median |z| ' ||
         printf('%.1f', json_extract(r, '$.boundary_median_abs_z'))
       END || CASE WHEN from_tag THEN '' ELSE '; epochs inferred from the curve''s period, ' ||
         CAST(json_extract(steps, '$[1]') - json_extract(steps, '$[0]') AS INTEGER) || ' steps' END || ')' AS message,
       json_object('series', tag, 'direction', CASE WHEN is_up THEN 'up' ELSE 'down' END,
                   'boundaries', json_extract(r, '$.boundaries'), 'evaluated', json_extract(r, '$.evaluated'),
                   'up', json_extract(r, '$.up'), 'down', json_extract(r, '$.down'),
                   'boundary_median_abs_z', json_extract(r, '$.boundary_median_abs_z'),
                   'control_median_abs_z', json_extract(r, '$.control_median_abs_z'),
                   'jumps', json(json_extract(r, '$.jumps')), 'window_points', w,
                   'folded_z', json_extract(r, '$.folded_z'), 'folded_control_z', json_extract(r, '$.folded_control_z'),
                   'folded_effect', json_extract(r, '$.folded_effect'),
                   'within_epoch_rise', rise,
                   'method', CASE WHEN one_by_one THEN 'boundaries' ELSE 'folded' END) AS evidence
FROM placed

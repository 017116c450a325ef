-- id: loss_divergence
-- title: Loss is diverging
-- severity: critical
-- roles: train_loss
-- inhibited_by: non_finite_loss, loss_constant
-- cause: The learning rate is too high for this stage of training (a schedule that rises, a
--   warmup that ends too high, an LR restart), or the optimizer state was lost on a resume.
-- fix: Stop the run: it will not come back by itself. Resume from the checkpoint at the best
--   step with the learning rate halved (or the warmup lengthened), and add gradient clipping.
-- param window = 25: points in the rolling median that smooths the loss (spikes do not count)
-- param short_window = 5: a run of fewer than 4 x window points (an epoch per point) smooths
--   over a quarter of its points instead (this many at least): 20 epochs are a run too
-- param min_points = 16: loss points needed before judging
-- param ratio = 2: smoothed loss now over its best, at least
-- param trend_z = 3: Mann–Kendall z of the loss since its best, at least (a persistent rise)
-- param min_frac = 0.05: the rise spans at least this fraction of the run's steps
-- param sustained_ratio = 1.5: or a smaller rise, at least this many times the best, ...
-- param sustained_z = 5: ... with a trend at least this strong ...
-- param sustained_frac = 0.25: ... over at least this fraction of the run
-- param recent_z = 2: below collapse_ratio, a rise made by one step (step_share of it at least)
--   must still be going on over the later half of the stretch since the best (Mann–Kendall z at
--   least this): a loss that stepped up 1.5-2x once and stayed there is a spike that did not
--   recover (loss_spikes), not a divergence; one that climbed there and stays has diverged
-- param step_share = 0.6: the share of the rise one jump (medians of a fifth of the window
--   either side) makes for it to count as a step
-- param collapse_ratio = 3: at least this many times its best, a loss that stopped rising has
--   still diverged (a collapse: it will not come back by itself)
-- param dive_ratio = 100: a loss that went negative: its recent level is below minus this many
--   times its early size (the median |loss| of its first tenth), at least
-- param dive_min_points = 20: loss points needed for the downward form
-- param turn_frac = 0.1: a loss that is not positive counts as diverging upwards only when its
--   rise began (the hinge where flat turns into rising) after at least this fraction of the run:
--   one that rises from its first step is likelier a maximised objective (an ELBO, a reward, a
--   log-likelihood) taken for a loss, since its sign does not say which way is better
-- param acc_hold = 0.03: a validation accuracy whose recent level (median of its last 3
--   evaluations, all after the loss's best) is within this (absolute, as a fraction) of its
--   best before the rise says the model still does as well on held-out data: the rise is
--   information (without an evaluation before the rise there is nothing to compare with)
-- param blowup_ratio = 10: the smoothed loss this many times above its best so far (an order
--   of magnitude, which no noisy run does over several points) is a blow-up however it got
--   there; still there (for min_frac of the run), it has diverged without a trend test (a 40x
--   jump that stays flat has no trend); come back since, it is a transient (a warning, as the
--   run survived, but lost the ground it had to make up again)
--
-- Method: the loss on a log scale, smoothed by a rolling median; its best (lowest) level and
-- where it was; the current level. Diverging when the current level is `ratio` times the best,
-- the rise since the best is a significant monotone trend (not a single spike), and it is
-- not already falling back; and the level is new: a curve that already came down past halfway
-- since, went back up this high and fell again by itself is swinging (loss_oscillation).
-- (The step where it was as high before is `was_as_high_step` in tw_divergence's result.)
--
-- An RL run (a `reward` series: SB3's rollout/ep_rew_mean, CleanRL's episodic_return, ...)
-- whose return is still climbing at the end: its value or TD loss predicts returns, so it grows
-- with them (4x as the return goes from -150 to 70 is learning). Such a rise is information;
-- one while the return falls back is the value function diverging (a target network never
-- refreshed), and stays critical.
--
-- Downwards: a loss that can go negative (energy-based, contrastive, a likelihood with a
-- learned variance) has no log scale, and one diving from O(1) to -1e18 has diverged as surely
-- as one climbing to +1e18: the objective found a direction in which it is unbounded. The
-- downward form asks for orders of magnitude (dive_ratio times its early size) below zero, now
-- and still near its deepest (not come back). Being negative is no problem in itself (an RL
-- objective often is), nor is a maximised objective rising through zero (an ELBO).
--
-- Upwards, for such a loss (any value <= 0): no log scale either, so the rise is measured in
-- the loss's own early size (median |loss| of its first tenth) or its best's size, whichever is
-- larger: `ratio` 2 then means "rose by once its size", as it does for a positive loss (an RL
-- objective around -12 that climbs to +50 and keeps climbing). The same trend tests apply, and
-- one more: the rise began after a stable stretch (turn_frac), where the onset is put. A loss
-- learns first and then loses it; a curve that climbs from its first step with no sign to say
-- which way is better is as likely an ELBO rising through zero.
--
-- A validation accuracy that holds: a training loss that climbs 29x while the accuracy on a
-- fixed held-out set stays at 0.96-0.97 is not a model coming apart (an LR too high takes the
-- accuracy down with it) but training data that got harder: a curriculum, an augmentation
-- ramped up, a mix that shifted. That rise is information, and says so.
--
-- Blow-ups: the largest excursion of the smoothed curve above its best so far. Ten times that
-- best over half a smoothing window at least (a rolling median ignores a lone spike) is a
-- blow-up however it got there: still up, it has diverged even with no trend (a jump that
-- stays flat); back within 2x of that best since, it is a transient: the steps it took to come
-- back were lost, and the instability that caused it is still there.
WITH sized AS MATERIALIZED (
  -- Per series: the smoothing window (the default, or for a short run a quarter of its
  -- points), and its lowest value.
  SELECT series_id, count(*) AS n, min(value) AS lowest,
         CAST(min(:window, max(:short_window, count(*) / 4)) AS INTEGER) AS w
  FROM role_points WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0 GROUP BY series_id
), negs AS MATERIALIZED (
  -- Only series that went negative take the downward reading.
  SELECT series_id FROM sized WHERE lowest < 0 AND n >= :dive_min_points
), pts AS MATERIALIZED (
  SELECT series_id, tag, step, value
  FROM role_points WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
    AND series_id IN (SELECT series_id FROM negs)
), neg AS MATERIALIZED (
  -- Their early size (median |loss| of the first tenth), recent level (median of the last
  -- twentieth), latest and deepest point.
  SELECT series_id, tag, count(*) AS n, min(value) AS deepest, max(step) AS last_step,
         json_extract(tw_ends(step, abs(value)), '$.start') AS early,
         json_extract(tw_ends(step, value, 3, 0.05), '$.end') AS cur,
         (SELECT value FROM pts p WHERE p.series_id = pts.series_id ORDER BY step DESC LIMIT 1) AS latest
  FROM pts GROUP BY series_id
), dive AS MATERIALIZED (
  -- Not come back: the latest point is still within 10x of the deepest (a dive that speeds up
  -- has its deepest point last, far below the median of the last few).
  SELECT neg.*,
         -- Onset: where the loss went below the threshold for good (the first point of the last
         -- stretch beyond dive_ratio times its early size).
         (SELECT min(step) FROM pts p WHERE p.series_id = neg.series_id AND p.step >
            (SELECT COALESCE(max(step), -1e300) FROM pts q
             WHERE q.series_id = neg.series_id AND q.value > -:dive_ratio * neg.early)) AS onset
  FROM neg WHERE early > 0 AND cur <= -:dive_ratio * early AND latest <= 0.1 * deepest
), turn AS MATERIALIZED (
  -- Series that are not positive: where their rise began, and their span.
  SELECT series_id, tw_hinge_onset(step, value) AS hinge, min(step) AS lo, max(step) AS hi
  FROM role_points WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
    AND series_id IN (SELECT series_id FROM sized WHERE lowest <= 0)
  GROUP BY series_id
), d AS MATERIALIZED (
  SELECT series_id, tag, sized.n AS n, sized.w AS w, tw_divergence(step, value, sized.w) AS j
  FROM role_points JOIN sized USING (series_id)
  WHERE run_id = :run_id AND role = 'train_loss' AND value_class = 0
  GROUP BY series_id
), v0 AS (
  SELECT series_id, tag, n, w, j, json_extract(j, '$.log') AS log,
         json_extract(j, '$.best_step') AS best_step, json_extract(j, '$.best') AS best,
         json_extract(j, '$.current') AS cur, json_extract(j, '$.ratio_to_best') AS ratio,
         json_extract(j, '$.peak_ratio_to_best') AS peak, json_extract(j, '$.mk_z_since_best') AS z,
         json_extract(j, '$.frac_since_best') AS frac, json_extract(j, '$.last_step') AS last_step,
         json_extract(j, '$.was_as_high_step') AS was_as_high, json_extract(j, '$.mk_z_recent') AS z_recent,
         COALESCE(json_extract(j, '$.step_share'), 0) AS step_share,
         json_extract(j, '$.peak') AS peak_value, json_extract(j, '$.early_size') AS early,
         json_extract(j, '$.excursion_ratio') AS ex_ratio, json_extract(j, '$.excursion_from_step') AS ex_from,
         json_extract(j, '$.excursion_peak_step') AS ex_peak, json_extract(j, '$.excursion_back_step') AS ex_back
  FROM d WHERE n >= :min_points AND json_extract(j, '$.best_step') IS NOT NULL
), v AS (
  -- A loss that is not positive has no ratios: its rise is read in units of its size
  -- (ratio = 1 + rise / size, so the thresholds below mean the same for both).
  SELECT series_id, tag, n, w, j, log, cur, z, frac, last_step, was_as_high, z_recent,
         step_share, ex_ratio, ex_from, ex_peak, ex_back, best,
         -- Not positive: the onset is where the rise began (the hinge), not a noisy minimum.
         CASE WHEN log = 1 THEN best_step ELSE turn.hinge END AS best_step,
         CASE WHEN log = 1 THEN ratio ELSE 1 + (cur - best) / max(abs(best), early) END AS ratio,
         CASE WHEN log = 1 THEN peak ELSE 1 + (peak_value - best) / max(abs(best), early) END AS peak
  FROM v0 LEFT JOIN turn USING (series_id)
  WHERE log = 1 OR (max(abs(best), early) > 0 AND turn.hinge - turn.lo >= :turn_frac * (turn.hi - turn.lo))
), acc AS MATERIALIZED (
  -- Each validation accuracy's evaluations, as fractions (a percentage scaled).
  SELECT series_id, tag, step, value / CASE WHEN max(value) OVER (PARTITION BY series_id) > 1 THEN 100.0 ELSE 1.0 END AS a
  FROM val_evals WHERE run_id = :run_id AND role = 'val_acc'
), up0 AS (
  -- rl: the run's episode return is still climbing (run_returns_rising). held: a validation
  -- accuracy measured before the loss's best (its best there is the reference: the model
  -- before the rise) and at least 3 times since, its last 3 within acc_hold of that best.
  SELECT v.*, EXISTS (SELECT 1 FROM run_returns_rising WHERE run_id = :run_id) AS rl,
         (SELECT json_object('tag', x.tag, 'best', max(x.a), 'recent',
                   (SELECT tw_median(a) FROM (SELECT a FROM acc y WHERE y.series_id = x.series_id ORDER BY step DESC LIMIT 3)),
                   'since', (SELECT count(*) FROM acc y WHERE y.series_id = x.series_id AND y.step > v.best_step))
          FROM acc x WHERE x.step <= v.best_step GROUP BY x.series_id ORDER BY max(x.a) DESC LIMIT 1) AS acc_j
  FROM v
), up AS (
  SELECT up0.*, acc_j IS NOT NULL AND json_extract(acc_j, '$.since') >= 3
                AND json_extract(acc_j, '$.recent') >= json_extract(acc_j, '$.best') - :acc_hold AS held
  FROM up0
  WHERE (CASE WHEN log = 1 THEN ratio >= 0.7 * peak ELSE ratio - 1 >= 0.7 * (peak - 1) END) AND was_as_high IS NULL
    AND ((ratio >= :ratio AND z >= :trend_z AND frac >= :min_frac)
         OR (ratio >= :sustained_ratio AND z >= :sustained_z AND frac >= :sustained_frac)
         OR (ratio >= :blowup_ratio AND frac >= :min_frac))
    AND (z_recent >= :recent_z OR ratio >= :collapse_ratio OR step_share < :step_share)
)
SELECT series_id, CASE WHEN rl OR held THEN 'info' ELSE 'critical' END AS severity,
       best_step AS onset_step, best_step AS first_step, last_step,
       tag || ' has risen from its best ' || printf('%.4g', best) ||
         CASE WHEN log = 1 THEN ' at step ' ELSE ' (the rise began at step ' END || best_step ||
         CASE WHEN log = 1 THEN '' ELSE ')' END ||
         ' to ' || printf('%.4g', cur) || ' (' ||
         CASE WHEN log = 1 THEN printf(CASE WHEN ratio < 1000 THEN '%.1f' ELSE '%.2g' END, ratio) || 'x'
              ELSE 'a rise of ' || printf('%.1f', ratio - 1) || 'x its size' END || ', smoothed over ' ||
         w || ' points) and ' ||
         CASE WHEN z_recent >= :recent_z THEN 'is still rising' ELSE 'has stayed up' END ||
         ' (trend z ' || printf('%.1f', z) || ' over ' ||
         printf('%.0f', 100 * frac) || '% of the run' ||
         CASE WHEN z_recent >= :recent_z THEN '' ELSE '; z ' || printf('%.1f', z_recent) || ' over its later half' END ||
         ')' || CASE WHEN rl
                     THEN '; the episode return is still climbing, and a value or TD loss grows with the returns it ' ||
                          'predicts: learning, unless the return turns down'
                     WHEN held
                     THEN '; but ' || json_extract(acc_j, '$.tag') || ' holds at ' || printf('%.3g', json_extract(acc_j, '$.recent')) ||
                          ' (' || printf('%.3g', json_extract(acc_j, '$.best')) || ' before the rise) over the ' ||
                          json_extract(acc_j, '$.since') || ' evaluations since: the model does as well on held-out data, ' ||
                          'so the training data likely changed (a curriculum, stronger augmentation, a shifted mix), not the model'
                     ELSE '' END AS message,
       json_object('series', tag, 'best_step', best_step, 'best', best, 'current', cur,
                   'ratio_to_best', ratio, 'trend_z', z, 'fraction_of_run_since_best', frac,
                   'recent_trend_z', z_recent, 'step_share', step_share,
                   'smoothing_window', w, 'log_scale', log = 1, 'validation_accuracy', json(acc_j)) AS evidence,
       CASE WHEN rl
         THEN 'An RL loss is not a supervised one: the value (or TD) targets are returns, and as the returns grow ' ||
              'so does the error in predicting them.'
            WHEN held
         THEN 'The training loss measures the training batches: when they get harder (a curriculum stage, augmentation ' ||
              'ramped up, a data mix that shifted, noisier labels) it rises while the model is as good as before.' END AS cause,
       CASE WHEN rl
         THEN 'Nothing while the return climbs; normalize the value targets (VecNormalize(norm_reward=True)) to keep ' ||
              'the loss readable. If the return turns down while this loss climbs, the value function is diverging: ' ||
              'lower the learning rate, refresh the target network more often.'
            WHEN held
         THEN 'Check what the training data did at the onset step (a curriculum stage, an augmentation schedule); if ' ||
              'nothing changed, look for label noise in the later shards. Watch the validation accuracy: if it turns ' ||
              'down, this is a divergence.' END AS fix
FROM up
UNION ALL
SELECT series_id, 'warning', ex_from, ex_from, last_step,
       tag || ' blew up: its smoothed level rose ' || printf('%.0f', ex_ratio) || 'x above its best so far (step ' ||
         ex_from || ') by step ' || ex_peak || ', and came back within 2x of that best only by step ' || ex_back ||
         ' (smoothed over ' || w || ' points): the run lost that stretch, and what made it blow up is still there',
       json_object('series', tag, 'form', 'transient', 'best_step', ex_from, 'peak_step', ex_peak,
                   'back_step', ex_back, 'excursion_ratio', ex_ratio, 'smoothing_window', w), NULL, NULL
FROM v
WHERE log = 1 AND ex_ratio >= :blowup_ratio AND ex_back IS NOT NULL AND series_id NOT IN (SELECT series_id FROM up)
UNION ALL
SELECT series_id, 'critical', onset, onset, last_step,
       tag || ' has dived below zero by orders of magnitude: from about ' || printf('%.3g', early) ||
         ' in size at the start to ' || printf('%.3g', cur) || ' now (deepest ' || printf('%.3g', deepest) ||
         ', since step ' || onset || '): the objective is unbounded below and the model exploits it',
       json_object('series', tag, 'direction', 'down', 'early_size', early, 'current', cur,
                   'deepest', deepest, 'ratio_to_early', -cur / early, 'onset_step', onset), NULL, NULL
FROM dive

-- id: memory_growth
-- title: Memory keeps growing
-- severity: warning
-- roles: memory
-- cause: A leak: tensors that keep their autograd graph are accumulated (losses appended to a
--   list without .item() or .detach(), metrics summed as tensors), a cache grows without bound,
--   or the data loader holds onto batches.
-- fix: Accumulate Python floats (loss.item()) or detached tensors; look for lists or dicts that
--   grow per step; torch.cuda.memory_summary() at two steps shows what grows.
-- param min_points = 20: memory readings needed
-- param trend_z = 4: Mann–Kendall z of memory over the run, at least (steady growth)
-- param min_growth = 0.1: growth from the first to the last tenth of the run, relative, at least
-- param skip_frac = 0.1: the first part of the run is skipped (allocators warm up)
WITH span AS (
  SELECT min(step) AS lo, max(step) AS hi FROM role_points WHERE run_id = :run_id AND role = 'memory'
), t AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, tw_trend(step, value) AS j
  FROM role_points, span WHERE run_id = :run_id AND role = 'memory' AND value_class = 0
    AND step >= span.lo + :skip_frac * (span.hi - span.lo)
  GROUP BY series_id
), v AS (
  SELECT series_id, tag, n, json_extract(j, '$.mk_z') AS z, json_extract(j, '$.start') AS start,
         json_extract(j, '$.end') AS fin, json_extract(j, '$.slope') AS slope,
         json_extract(j, '$.first_step') AS first_step, json_extract(j, '$.last_step') AS last_step,
         json_extract(j, '$.noise_sd') AS sd
  FROM t
), onset AS MATERIALIZED (
  -- Where growth began: a flat-then-rising hinge fitted to the whole series.
  SELECT v.*, (SELECT tw_hinge_onset(p.step, p.value) FROM role_points p WHERE p.run_id = :run_id
                 AND p.series_id = v.series_id AND p.value_class = 0) AS since
  FROM v
)
SELECT series_id, COALESCE(since, first_step) AS onset_step, first_step, last_step,
       tag || ' grew from ' || printf('%.4g', start) || ' to ' || printf('%.4g', fin) || ' (+' ||
         printf('%.0f', 100 * (fin / start - 1)) || '%) between steps ' || first_step || ' and ' || last_step ||
         ', steadily (trend z ' || printf('%.1f', z) || '; about ' || printf('%.3g', slope * 1000) ||
         ' per 1000 steps)' AS message,
       json_object('series', tag, 'start', start, 'end', fin, 'slope_per_step', slope, 'trend_z', z,
                   'points', n) AS evidence
FROM onset WHERE n >= :min_points AND start > 0 AND z >= :trend_z AND fin >= start * (1 + :min_growth)

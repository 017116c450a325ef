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
-- param min_rises = 5: readings that rose, at least (a leak grows all along)
-- param max_jump_share = 0.5: the largest single rise is at most this share of all the growth
--
-- A leak adds memory with every step, so nearly every reading is above the last. A caching
-- allocator (PyTorch's, a framework's buffer pool) grows in a few jumps, each when a larger
-- batch or sequence than any before arrives, and holds each new level: a staircase of a few
-- steps whose biggest step carries most of the growth is the allocator reaching a new peak,
-- not a leak.
WITH span AS (
  SELECT min(step) AS lo, max(step) AS hi FROM role_points WHERE run_id = :run_id AND role = 'memory'
), t AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, tw_trend(step, value) AS j
  FROM role_points, span WHERE run_id = :run_id AND role = 'memory' AND value_class = 0
    AND step >= span.lo + :skip_frac * (span.hi - span.lo)
  GROUP BY series_id
), rises AS MATERIALIZED (
  -- Per series, after the skipped start: how many readings rose, by how much in all, and the
  -- largest single rise.
  SELECT series_id, sum(d > 0) AS n_rises, sum(max(d, 0)) AS rise_total, max(d) AS rise_max
  FROM (SELECT p.series_id, p.value - lag(p.value) OVER (PARTITION BY p.series_id ORDER BY p.step) AS d
        FROM role_points p, span WHERE p.run_id = :run_id AND p.role = 'memory' AND p.value_class = 0
          AND p.step >= span.lo + :skip_frac * (span.hi - span.lo))
  GROUP BY series_id
), v AS (
  SELECT t.series_id, tag, n, json_extract(j, '$.mk_z') AS z, json_extract(j, '$.start') AS start,
         json_extract(j, '$.end') AS fin, json_extract(j, '$.slope') AS slope,
         json_extract(j, '$.first_step') AS first_step, json_extract(j, '$.last_step') AS last_step,
         json_extract(j, '$.noise_sd') AS sd, n_rises, rise_total, rise_max
  FROM t JOIN rises USING (series_id)
), onset AS MATERIALIZED (
  -- Where growth began: a flat-then-rising hinge fitted to the whole series.
  SELECT v.*, (SELECT tw_hinge_onset(p.step, p.value) FROM role_points p WHERE p.run_id = :run_id
                 AND p.series_id = v.series_id AND p.value_class = 0) AS since
  FROM v
)
SELECT series_id, COALESCE(since, first_step) AS onset_step, first_step, last_step,
       tag || ' grew from ' || printf('%.4g', start) || ' to ' || printf('%.4g', fin) || ' (+' ||
         printf('%.0f', 100.0 * fin / start - 100) || '%) between steps ' || first_step || ' and ' || last_step ||
         ', steadily (trend z ' || printf('%.1f', z) || '; about ' || printf('%.3g', slope * 1000) ||
         ' per 1000 steps; ' || n_rises || ' of ' || (n - 1) || ' readings rose, none by more than ' ||
         printf('%.0f', 100.0 * rise_max / rise_total) || '% of the growth)' AS message,
       json_object('series', tag, 'start', start, 'end', fin, 'slope_per_step', slope, 'trend_z', z,
                   'points', n, 'rises', n_rises, 'largest_rise_share', 1.0 * rise_max / rise_total) AS evidence
FROM onset WHERE n >= :min_points AND start > 0 AND z >= :trend_z AND fin >= start * (1 + :min_growth)
  AND n_rises >= :min_rises AND rise_max <= :max_jump_share * rise_total

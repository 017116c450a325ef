-- id: update_ratio_off
-- title: Update-to-weight ratio far from healthy
-- severity: warning
-- roles: update_ratio
-- cause: Each step changes the weights by |lr * update| / |w|; around 1e-3 is the usual healthy
--   scale. Far below: the learning rate is too low (or parameters are frozen) and training
--   crawls. Far above: the learning rate is too high and each step rewrites the weights.
-- fix: Scale the learning rate toward a ratio near 1e-3 (by the factor it is off), then
--   re-check the loss; for a ratio of zero check that the optimizer holds these parameters.
-- param recent = 50: recent points whose median is judged
-- param low = 0.00001: at most this is too small
-- param high = 0.03: at least this is too large
WITH pts AS (
  SELECT series_id, tag, step, value, row_number() OVER (PARTITION BY series_id ORDER BY step DESC) AS k
  FROM role_points WHERE run_id = :run_id AND role = 'update_ratio' AND value_class = 0
), v AS MATERIALIZED (
  SELECT series_id, tag, tw_median(value) AS med, count(*) AS n, min(step) AS first_step, max(step) AS last_step
  FROM pts WHERE k <= :recent GROUP BY series_id
), began AS MATERIALIZED (
  SELECT v.*, (SELECT max(step) FROM scalars WHERE series_id = v.series_id AND superseded = 0
                 AND value > :low AND value < :high) AS last_ok,
         (SELECT min(step) FROM scalars WHERE series_id = v.series_id AND superseded = 0) AS series_first
  FROM v
), onset AS MATERIALIZED (
  -- Off from the start when the first tenth's median is already off (single noisy points may
  -- stray into the band); else just after the last point inside the band.
  SELECT began.*, CASE WHEN (SELECT tw_median(value) FROM scalars WHERE series_id = began.series_id
                               AND superseded = 0 AND step <= began.series_first + 0.1 * (began.last_step - began.series_first))
                            NOT BETWEEN :low AND :high THEN began.series_first
                       ELSE COALESCE((SELECT min(step) FROM scalars WHERE series_id = began.series_id AND superseded = 0
                                        AND step > began.last_ok), began.series_first) END AS since
  FROM began
)
SELECT series_id, since AS onset_step, first_step, last_step,
       tag || ' is ' || printf('%.2e', med) || ' (median of the last ' || n || ' points): ' ||
         CASE WHEN med <= :low THEN 'far below' ELSE 'far above' END || ' the healthy ~1e-3' AS message,
       json_object('series', tag, 'median', med, 'points', n, 'low', :low, 'high', :high) AS evidence
FROM onset WHERE n >= 10 AND (med <= :low OR med >= :high)

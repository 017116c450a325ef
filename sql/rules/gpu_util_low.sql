-- id: gpu_util_low
-- title: The GPU is idle most of the run
-- severity: info
-- roles: gpu_util
-- cause: The GPU waits for work most of the time: the input pipeline cannot keep up (too few
--   DataLoader workers, decoding or augmentation on the main process, data read from a slow or
--   remote disk), the host does work between steps (logging, metric computation, checkpointing,
--   .item() or .cpu() calls that synchronize every step), or the model and batch are too small
--   to fill the device.
-- fix: Profile one epoch (torch.profiler, or time the wait for the next batch against the step):
--   raise num_workers and set pin_memory and persistent_workers, move decoding and augmentation
--   into the workers or onto the GPU, cache the dataset on local disk, log less often and avoid
--   per-step host synchronization; if the data keeps up, a larger batch fills the device.
-- param low = 50: median utilization (percent) of a GPU the run uses, below this
-- param min_points = 10: readings of that GPU, at least
-- param skip_frac = 0.05: the first readings (start-up, data loading, compilation) are left out
-- param used = 10: a GPU whose utilization never went above this is not used by the run (a
--   multi-GPU machine's others): it is counted, not judged
--
-- Information, never a warning: an idle GPU wastes money and time but does not make the model
-- wrong, and a small model on a large GPU is idle by nature. System metrics come from W&B
-- (`system/gpu.N.gpu`, sampled every few seconds) or a tag of the run's own (`gpu_util`).
WITH pts AS (
  SELECT series_id, tag, step, value,
         row_number() OVER (PARTITION BY series_id ORDER BY step) AS i,
         count(*) OVER (PARTITION BY series_id) AS n
  FROM role_points WHERE run_id = :run_id AND role = 'gpu_util' AND value_class = 0
), gpu AS MATERIALIZED (
  SELECT series_id, tag, count(*) AS n, tw_median(value) AS med, max(value) AS hi,
         tw_quantile(value, 0.9) AS p90, min(step) AS first_step, max(step) AS last_step
  FROM pts WHERE i > CAST(n * :skip_frac AS INTEGER) GROUP BY series_id
), idle AS MATERIALIZED (
  SELECT count(*) AS unused, (SELECT count(*) FROM gpu) AS gpus FROM gpu WHERE hi <= :used
)
SELECT series_id, first_step AS onset_step, first_step, last_step,
       tag || ': the GPU was busy a median ' || printf('%.0f', med) || '% of the time over ' || n ||
         ' readings (90th percentile ' || printf('%.0f', p90) || '%)' ||
         CASE WHEN unused > 0 THEN '; ' || unused || ' of the ' || gpus || ' GPUs logged stayed idle throughout'
              ELSE '' END || ': it waits for data or for the host most of the run' AS message,
       json_object('series', tag, 'median', med, 'p90', p90, 'max', hi, 'readings', n,
                   'idle_gpus', unused, 'gpus', gpus) AS evidence
FROM gpu, idle
WHERE n >= :min_points AND hi > :used AND med < :low

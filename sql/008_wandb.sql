-- trainwatch store, version 8: W&B runs (docs/schema.md).
--
-- A W&B run directory (wandb/run-<time>-<id>/, offline-run-...) is a run like a TensorBoard
-- run directory, with format 'wandb'. What the W&B SDK says about the run is kept beside it;
-- tfevents runs leave these columns NULL.
ALTER TABLE runs ADD COLUMN external_id TEXT;    -- W&B's run id (the <id> of the directory)
ALTER TABLE runs ADD COLUMN project TEXT;
ALTER TABLE runs ADD COLUMN entity TEXT;
ALTER TABLE runs ADD COLUMN display_name TEXT;
ALTER TABLE runs ADD COLUMN start_time REAL;     -- unix seconds, from the run record
ALTER TABLE runs ADD COLUMN exit_code INTEGER;   -- NULL while running (or killed unseen)
ALTER TABLE runs ADD COLUMN sdk_version TEXT;    -- header record, else telemetry's cli_version
-- A resumed W&B run writes a new directory with the same run id: each directory is a run
-- row, and a later one points at the one it continues.
ALTER TABLE runs ADD COLUMN continues_run_id INTEGER;
CREATE INDEX runs_by_external_id ON runs(external_id) WHERE external_id IS NOT NULL;

-- W&B numbers its records 1..N (SDK >= 0.13.8): the last number read tells a gap, which is
-- lost data, from a file that merely grew.
ALTER TABLE sources ADD COLUMN last_record_num INTEGER NOT NULL DEFAULT 0;

-- define_metric's step_metric: the x axis W&B plots this series against (HF Trainer's
-- train/global_step, say); '' when none was defined. Points are stored at W&B's _step.
ALTER TABLE series ADD COLUMN step_metric TEXT NOT NULL DEFAULT '';

-- wandb.config and the run summary, as W&B keeps them: a key (nested keys joined with '.')
-- and its JSON value (NaN and Infinity written bare, as Python writes them).
CREATE TABLE run_config (
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  key        TEXT NOT NULL,
  value_json TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

CREATE TABLE run_summary_values (
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  key        TEXT NOT NULL,
  value_json TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

-- The logical W&B run: every directory of one run id, in start order.
CREATE VIEW wandb_runs AS
SELECT r.external_id AS wandb_id, r.project, r.entity, r.display_name, r.name AS run,
       r.run_id, r.start_time, r.exit_code, r.sdk_version, r.continues_run_id
FROM runs r WHERE r.format = 'wandb';

-- trainwatch store, version 15: run lifecycle events (docs/notifications.md, "Run events").
--
-- A run started, resumed, finished or crashed, as the diagnosis thread judged it from the files
-- (an exit record, a SessionLog STOP, the HF Trainer's end summary, a writer process gone, a
-- planned end reached and then quiet). Written only by the diagnosis thread, in the same
-- transaction as the outbox messages that announce it: an event is recorded with its messages
-- or not at all, so it is announced exactly once across restarts.
CREATE TABLE run_lifecycle (
  event_id   INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  kind       TEXT NOT NULL CHECK (kind IN ('started', 'resumed', 'finished', 'crashed')),
  -- What makes it one event of its run: 'start'; 'end:N' (the run's Nth end: a run that writes
  -- again after an end, resumed, can end again); 'restart:<source_id>:<offset>' (the run_events
  -- row of the restart). A run never has two events of one cause.
  cause_key  TEXT NOT NULL,
  time       REAL NOT NULL,           -- when trainwatch recorded it (unix seconds)
  last_wall  REAL,                    -- the run's newest point's wall time then
  last_step  INTEGER,                 -- its last step then
  how        TEXT NOT NULL,           -- the evidence: "W&B exit code 0", "SessionLog STOP", ...
  announced  INTEGER NOT NULL,        -- 1: queued for the channels; 0: recorded only (old history)
  title      TEXT NOT NULL,           -- "Run finished", ...
  message    TEXT NOT NULL,           -- the summary in a few sentences
  advice     TEXT NOT NULL DEFAULT '',-- the checkpoint to keep, what became of its findings
  summary    TEXT NOT NULL DEFAULT '{}',  -- JSON: the summary's numbers (payload's run.summary)
  fields     TEXT NOT NULL DEFAULT '{}',  -- JSON: the summary as label -> text, for chat fields
  sparkline  TEXT NOT NULL DEFAULT '',
  UNIQUE (run_id, cause_key)
);
CREATE INDEX run_lifecycle_by_run ON run_lifecycle(run_id, kind);

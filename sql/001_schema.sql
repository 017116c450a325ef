-- trainwatch store, version 1. Applied once, in a transaction, when PRAGMA user_version < 1.
-- docs/schema.md documents every table and view; the views are the stable contract for
-- ad hoc queries (sqlite3, pandas, Grafana). Raw tables may grow columns in later versions.

-- One row per trainwatch database: how a foreign SQLite file is told apart from ours.
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta(key, value) VALUES ('application', 'trainwatch');

-- A run: a directory directly holding event files, named relative to the ingested root.
CREATE TABLE runs (
  run_id        INTEGER PRIMARY KEY,
  root          TEXT NOT NULL,           -- absolute path of the ingested root
  name          TEXT NOT NULL,           -- path relative to root; the root itself is '.'
  format        TEXT NOT NULL DEFAULT 'tensorboard',
  first_seen    REAL NOT NULL,           -- unix seconds when trainwatch first saw it
  images        INTEGER NOT NULL DEFAULT 0,  -- summaries counted, not stored
  audio         INTEGER NOT NULL DEFAULT 0,
  graphs        INTEGER NOT NULL DEFAULT 0,  -- graph_def + meta_graph_def events
  run_metadata  INTEGER NOT NULL DEFAULT 0,
  other_tensors INTEGER NOT NULL DEFAULT 0,  -- tensor summaries of other plugins (pr_curves, ...)
  UNIQUE (root, name)
);

-- A series: one tag of one run, of one kind.
CREATE TABLE series (
  series_id  INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  tag        TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('scalar', 'histogram', 'text')),
  plugin     TEXT NOT NULL DEFAULT '',  -- plugin from the tag's summary metadata, if any
  data_class INTEGER NOT NULL DEFAULT 0,
  UNIQUE (run_id, tag, kind)
);

-- One event file, one generation of it (a file replaced or truncated in place starts a new one).
CREATE TABLE sources (
  source_id        INTEGER PRIMARY KEY,
  run_id           INTEGER NOT NULL REFERENCES runs(run_id),
  path             TEXT NOT NULL,        -- absolute path
  generation       INTEGER NOT NULL DEFAULT 0,
  dev              INTEGER NOT NULL,
  ino              INTEGER NOT NULL,
  size_seen        INTEGER NOT NULL DEFAULT 0,  -- file size at the last read
  committed_offset INTEGER NOT NULL DEFAULT 0,  -- every record before this offset is stored
  resyncing        INTEGER NOT NULL DEFAULT 0,  -- 1: scanning for a valid header after damage
  resync_from      INTEGER NOT NULL DEFAULT 0,
  status           TEXT NOT NULL DEFAULT 'active'
                   CHECK (status IN ('active', 'rejected', 'replaced', 'gone')),
  records          INTEGER NOT NULL DEFAULT 0,
  error_count      INTEGER NOT NULL DEFAULT 0,
  first_seen       REAL NOT NULL,
  last_read        REAL,
  UNIQUE (path, generation)
);

-- Scalar points. The key clusters a series' points by step for range scans; source_id,
-- offset and vidx (position of the value in its Summary) make every point of every file
-- distinct, so nothing is merged or lost when writers share a step.
-- value_class: 0 finite, 1 NaN, 2 +Inf, 3 -Inf. SQLite stores a NaN REAL as NULL, so
-- value is NULL exactly when value_class = 1.
CREATE TABLE scalars (
  series_id   INTEGER NOT NULL,
  step        INTEGER NOT NULL,
  source_id   INTEGER NOT NULL,
  offset      INTEGER NOT NULL,
  vidx        INTEGER NOT NULL,
  wall_time   REAL NOT NULL,
  value       REAL,
  value_class INTEGER NOT NULL DEFAULT 0,
  superseded  INTEGER NOT NULL DEFAULT 0,  -- 1: logged before a restart that re-logged this step
  PRIMARY KEY (series_id, step, source_id, offset, vidx)
) WITHOUT ROWID;

-- Histograms: buckets is a BLOB of little-endian f64 triples (left edge, right edge, count),
-- empty buckets omitted.
CREATE TABLE histograms (
  series_id  INTEGER NOT NULL,
  step       INTEGER NOT NULL,
  source_id  INTEGER NOT NULL,
  offset     INTEGER NOT NULL,
  vidx       INTEGER NOT NULL,
  wall_time  REAL NOT NULL,
  count      REAL NOT NULL,
  sum        REAL,
  min        REAL,
  max        REAL,
  buckets    BLOB NOT NULL,
  superseded INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (series_id, step, source_id, offset, vidx)
) WITHOUT ROWID;

CREATE TABLE texts (
  series_id  INTEGER NOT NULL,
  step       INTEGER NOT NULL,
  source_id  INTEGER NOT NULL,
  offset     INTEGER NOT NULL,
  vidx       INTEGER NOT NULL,
  wall_time  REAL NOT NULL,
  text       TEXT NOT NULL,
  superseded INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (series_id, step, source_id, offset, vidx)
) WITHOUT ROWID;

-- Hyperparameters per run (the last session_start_info wins).
CREATE TABLE hparams (
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  key        TEXT NOT NULL,
  value_type TEXT NOT NULL CHECK (value_type IN ('number', 'string', 'bool', 'null')),
  value_num  REAL,
  value_text TEXT,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

-- Lifecycle events: file_version, SessionLog START/STOP/CHECKPOINT, and the restarts
-- trainwatch inferred (kind 'restart': detail says why).
CREATE TABLE run_events (
  run_id    INTEGER NOT NULL REFERENCES runs(run_id),
  source_id INTEGER NOT NULL,
  offset    INTEGER NOT NULL,
  kind      TEXT NOT NULL,
  step      INTEGER,
  wall_time REAL,
  detail    TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (source_id, offset, kind)
) WITHOUT ROWID;

-- Everything that went wrong reading a file: where, what, and when.
CREATE TABLE ingest_errors (
  error_id  INTEGER PRIMARY KEY,
  source_id INTEGER,
  path      TEXT NOT NULL,
  offset    INTEGER NOT NULL,
  length    INTEGER NOT NULL DEFAULT 0,
  kind      TEXT NOT NULL,
  detail    TEXT NOT NULL,
  time      REAL NOT NULL
);
CREATE INDEX ingest_errors_by_time ON ingest_errors(time);

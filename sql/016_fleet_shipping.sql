-- trainwatch store, version 16: what this host has shipped to the fleet's PostgreSQL
-- (docs/fleet.md). Written only by the daemon's shipper thread (src/fleet), and only after
-- PostgreSQL committed what a mark covers: a crash between the two ships a batch again, which
-- PostgreSQL's ON CONFLICT DO NOTHING absorbs. Without [fleet] these tables stay empty but for
-- supersede_log, one row per restart.

-- Per source: how far its points (scalars, histograms, texts) are shipped. A source is looked
-- at again when its committed_offset or records moved; its points at offsets >= max_offset are
-- sent (the one at max_offset again: a record's other values may come in a later commit).
CREATE TABLE fleet_shipped (
  source_id        INTEGER PRIMARY KEY,
  committed_offset INTEGER NOT NULL,  -- the source's committed_offset when last shipped
  records          INTEGER NOT NULL,  -- and its records (a whole-file format's size may not move)
  max_offset       INTEGER NOT NULL   -- the highest point offset shipped
);

-- Per append-only table, the highest id shipped: finding_transitions, run_lifecycle,
-- supersede_log.
CREATE TABLE fleet_marks (
  name  TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;

-- Points marked superseded after they were stored (a restart re-logged their steps, or their
-- file was replaced): what Store::MarkSuperseded and MarkSourceSuperseded did, in the same
-- transaction, so the shipper can mark the same points superseded in PostgreSQL.
CREATE TABLE supersede_log (
  seq         INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL,
  source_id   INTEGER,   -- every point of this source (a replaced file); else the three below
  from_step   INTEGER,   -- points at step >= from_step ...
  before_wall REAL,      -- ... logged before this wall time ...
  series_ids  TEXT       -- ... of these series (comma-separated; NULL: every series of the run)
);

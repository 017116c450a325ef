-- trainwatch store, version 3: what the live daemon says about itself, for `trainwatch status`.

-- key/value pairs the daemon keeps current: pid, started, config, roots (JSON array),
-- last_rescan, inotify ('on', 'off', 'degraded: ...'), phase ('backfill', 'live', 'stopped').
CREATE TABLE daemon_state (
  key     TEXT PRIMARY KEY,
  value   TEXT NOT NULL,
  updated REAL NOT NULL
) WITHOUT ROWID;

-- Find a file again by identity when its path changed (a renamed run directory).
CREATE INDEX sources_by_inode ON sources(dev, ino);

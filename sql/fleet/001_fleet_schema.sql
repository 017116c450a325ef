-- trainwatch fleet store (PostgreSQL), version 1: the SQLite store's twin with a host column
-- (docs/fleet.md). Every host's daemon ships what its own store committed; ids (run_id,
-- series_id, source_id, ...) are that host's, so every key starts with host. Applied by the
-- first daemon that connects, under an advisory lock, in one transaction.

-- One row per host: what its shipper last said about itself (`trainwatch fleet status`).
CREATE TABLE hosts (
  host           TEXT PRIMARY KEY,
  started        DOUBLE PRECISION,          -- unix seconds: the shipper's start
  last_heartbeat DOUBLE PRECISION NOT NULL, -- its last pass (every interval, busy or idle)
  last_shipped   DOUBLE PRECISION,          -- its last pass that shipped rows
  lag_sources    BIGINT NOT NULL DEFAULT 0, -- files with points not shipped yet
  lag_bytes      BIGINT NOT NULL DEFAULT 0, -- their committed bytes not shipped yet
  roots          TEXT NOT NULL DEFAULT '',  -- the roots it watches, one per line
  version        TEXT NOT NULL DEFAULT ''
);

CREATE TABLE runs (
  host          TEXT NOT NULL,
  run_id        BIGINT NOT NULL,
  root          TEXT NOT NULL,
  name          TEXT NOT NULL,
  format        TEXT NOT NULL,
  first_seen    DOUBLE PRECISION NOT NULL,
  external_id   TEXT,
  project       TEXT,
  entity        TEXT,
  display_name  TEXT,
  start_time    DOUBLE PRECISION,
  exit_code     BIGINT,
  PRIMARY KEY (host, run_id)
);

CREATE TABLE series (
  host        TEXT NOT NULL,
  series_id   BIGINT NOT NULL,
  run_id      BIGINT NOT NULL,
  tag         TEXT NOT NULL,
  kind        TEXT NOT NULL,
  plugin      TEXT NOT NULL DEFAULT '',
  data_class  INTEGER NOT NULL DEFAULT 0,
  step_metric TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (host, series_id)
);
CREATE INDEX series_by_run ON series (host, run_id);

CREATE TABLE sources (
  host             TEXT NOT NULL,
  source_id        BIGINT NOT NULL,
  run_id           BIGINT NOT NULL,
  path             TEXT NOT NULL,
  generation       BIGINT NOT NULL,
  status           TEXT NOT NULL,
  committed_offset BIGINT NOT NULL,
  records          BIGINT NOT NULL,
  PRIMARY KEY (host, source_id)
);

-- Points, keyed as locally plus host. value_class: 0 finite, 1 NaN (value NULL), 2 +Inf, 3 -Inf.
CREATE TABLE scalars (
  host        TEXT NOT NULL,
  series_id   BIGINT NOT NULL,
  step        BIGINT NOT NULL,
  source_id   BIGINT NOT NULL,
  "offset"    BIGINT NOT NULL,
  vidx        INTEGER NOT NULL,
  wall_time   DOUBLE PRECISION NOT NULL,
  value       DOUBLE PRECISION,
  value_class SMALLINT NOT NULL DEFAULT 0,
  superseded  SMALLINT NOT NULL DEFAULT 0,
  PRIMARY KEY (host, series_id, step, source_id, "offset", vidx)
);

CREATE TABLE histograms (
  host       TEXT NOT NULL,
  series_id  BIGINT NOT NULL,
  step       BIGINT NOT NULL,
  source_id  BIGINT NOT NULL,
  "offset"   BIGINT NOT NULL,
  vidx       INTEGER NOT NULL,
  wall_time  DOUBLE PRECISION NOT NULL,
  count      DOUBLE PRECISION NOT NULL,
  sum        DOUBLE PRECISION,
  min        DOUBLE PRECISION,
  max        DOUBLE PRECISION,
  buckets    BYTEA NOT NULL,              -- little-endian f64 triples (left, right, count)
  superseded SMALLINT NOT NULL DEFAULT 0,
  PRIMARY KEY (host, series_id, step, source_id, "offset", vidx)
);

CREATE TABLE texts (
  host       TEXT NOT NULL,
  series_id  BIGINT NOT NULL,
  step       BIGINT NOT NULL,
  source_id  BIGINT NOT NULL,
  "offset"   BIGINT NOT NULL,
  vidx       INTEGER NOT NULL,
  wall_time  DOUBLE PRECISION NOT NULL,
  text       TEXT NOT NULL,
  superseded SMALLINT NOT NULL DEFAULT 0,
  PRIMARY KEY (host, series_id, step, source_id, "offset", vidx)
);

CREATE TABLE hparams (
  host       TEXT NOT NULL,
  run_id     BIGINT NOT NULL,
  key        TEXT NOT NULL,
  value_type TEXT NOT NULL,
  value_num  DOUBLE PRECISION,
  value_text TEXT,
  PRIMARY KEY (host, run_id, key)
);

CREATE TABLE findings (
  host        TEXT NOT NULL,
  finding_id  BIGINT NOT NULL,
  rule        TEXT NOT NULL,
  run_id      BIGINT NOT NULL,
  series_id   BIGINT NOT NULL,
  severity    TEXT NOT NULL,
  state       TEXT NOT NULL,
  first_seen  DOUBLE PRECISION NOT NULL,
  last_seen   DOUBLE PRECISION NOT NULL,
  fired_at    DOUBLE PRECISION,
  resolved_at DOUBLE PRECISION,
  onset_step  BIGINT,
  first_step  BIGINT,
  last_step   BIGINT,
  message     TEXT NOT NULL,
  cause       TEXT NOT NULL,
  fix         TEXT NOT NULL,
  evidence    TEXT NOT NULL,
  PRIMARY KEY (host, finding_id)
);

CREATE TABLE finding_transitions (
  host          TEXT NOT NULL,
  transition_id BIGINT NOT NULL,
  finding_id    BIGINT NOT NULL,
  time          DOUBLE PRECISION NOT NULL,
  from_state    TEXT NOT NULL,
  to_state      TEXT NOT NULL,
  severity      TEXT NOT NULL,
  message       TEXT NOT NULL,
  PRIMARY KEY (host, transition_id)
);

CREATE TABLE run_lifecycle (
  host      TEXT NOT NULL,
  event_id  BIGINT NOT NULL,
  run_id    BIGINT NOT NULL,
  kind      TEXT NOT NULL,
  cause_key TEXT NOT NULL,
  time      DOUBLE PRECISION NOT NULL,
  last_wall DOUBLE PRECISION,
  last_step BIGINT,
  how       TEXT NOT NULL,
  title     TEXT NOT NULL,
  message   TEXT NOT NULL,
  advice    TEXT NOT NULL,
  PRIMARY KEY (host, event_id)
);

-- Shared roots (the same NFS directory mounted on several hosts): the host that holds a root's
-- lease ingests and diagnoses it; the lease lapses when its heartbeat is older than its ttl.
CREATE TABLE leases (
  root      TEXT PRIMARY KEY,
  host      TEXT NOT NULL,
  acquired  DOUBLE PRECISION NOT NULL,
  heartbeat DOUBLE PRECISION NOT NULL,
  ttl       DOUBLE PRECISION NOT NULL
);

-- The query contract, as in SQLite (docs/schema.md) with host first and a `time` (timestamptz
-- from wall_time) for Grafana. Column lists only ever grow.
CREATE VIEW scalar_points_all AS
SELECT p.host, r.name AS run, s.tag, p.step, p.wall_time,
       CASE p.value_class WHEN 1 THEN NULL ELSE p.value END AS value,
       CASE p.value_class WHEN 0 THEN 'finite' WHEN 1 THEN 'nan' WHEN 2 THEN '+inf' ELSE '-inf' END
         AS value_class,
       p.superseded, r.root, r.run_id, s.series_id, p.source_id, to_timestamp(p.wall_time) AS time
FROM scalars p JOIN series s USING (host, series_id) JOIN runs r ON r.host = s.host AND r.run_id = s.run_id;

CREATE VIEW scalar_points AS
SELECT host, run, tag, step, wall_time, value, value_class, root, run_id, series_id, source_id, time
FROM scalar_points_all WHERE superseded = 0;

CREATE VIEW histogram_points AS
SELECT h.host, r.name AS run, s.tag, h.step, h.wall_time, h.count, h.sum, h.min, h.max, h.buckets,
       r.run_id, s.series_id, to_timestamp(h.wall_time) AS time
FROM histograms h JOIN series s USING (host, series_id) JOIN runs r ON r.host = s.host AND r.run_id = s.run_id
WHERE h.superseded = 0;

CREATE VIEW text_points AS
SELECT t.host, r.name AS run, s.tag, t.step, t.wall_time, t.text, r.run_id, s.series_id,
       to_timestamp(t.wall_time) AS time
FROM texts t JOIN series s USING (host, series_id) JOIN runs r ON r.host = s.host AND r.run_id = s.run_id
WHERE t.superseded = 0;

CREATE VIEW run_hparams AS
SELECT h.host, r.name AS run, h.key, h.value_type,
       CASE h.value_type WHEN 'string' THEN h.value_text ELSE h.value_num::text END AS value, r.run_id
FROM hparams h JOIN runs r USING (host, run_id);

CREATE VIEW run_summary AS
SELECT r.host, r.run_id, r.root, r.name AS run,
       (SELECT count(*) FROM series s WHERE s.host = r.host AND s.run_id = r.run_id) AS series,
       (SELECT count(*) FROM scalars p JOIN series s USING (host, series_id)
         WHERE s.host = r.host AND s.run_id = r.run_id AND p.superseded = 0) AS scalar_points,
       (SELECT max(p.step) FROM scalars p JOIN series s USING (host, series_id)
         WHERE s.host = r.host AND s.run_id = r.run_id AND p.superseded = 0) AS last_step,
       (SELECT max(p.wall_time) FROM scalars p JOIN series s USING (host, series_id)
         WHERE s.host = r.host AND s.run_id = r.run_id) AS last_wall_time
FROM runs r;

CREATE VIEW finding_list AS
SELECT f.host, f.finding_id, f.rule, r.name AS run, COALESCE(s.tag, '') AS series, f.severity, f.state,
       f.onset_step, f.first_step, f.last_step, f.first_seen, f.last_seen, f.fired_at,
       f.resolved_at, f.message, f.cause, f.fix, f.evidence, r.run_id, f.series_id,
       to_timestamp(COALESCE(f.fired_at, f.first_seen)) AS time
FROM findings f JOIN runs r USING (host, run_id)
LEFT JOIN series s ON s.host = f.host AND s.series_id = f.series_id;

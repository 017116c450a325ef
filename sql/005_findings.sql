-- trainwatch store, version 5: diagnosis findings and their lifecycle (docs/diagnosis.md).
-- Written only by the daemon's diagnosis thread; `trainwatch diagnose` computes findings
-- without storing them.

-- One row per fingerprint (rule, run, series): what is firing now, or fired and resolved.
-- state: pending (seen, not held for the rule's `for` yet), firing, resolved.
-- series_id is 0 for findings about a whole run.
CREATE TABLE findings (
  finding_id  INTEGER PRIMARY KEY,
  rule        TEXT NOT NULL,
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  series_id   INTEGER NOT NULL DEFAULT 0,
  severity    TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  state       TEXT NOT NULL CHECK (state IN ('pending', 'firing', 'resolved')),
  first_seen  REAL NOT NULL,           -- unix seconds: when trainwatch first saw the condition
  last_seen   REAL NOT NULL,           -- the last evaluation that saw it
  fired_at    REAL,                    -- when it went pending -> firing (the latest time)
  resolved_at REAL,
  onset_step  INTEGER,                 -- where the condition began, in the run's steps
  first_step  INTEGER,                 -- the window of evidence
  last_step   INTEGER,
  message     TEXT NOT NULL,           -- what was seen, with the numbers
  cause       TEXT NOT NULL DEFAULT '',
  fix         TEXT NOT NULL DEFAULT '',
  evidence    TEXT NOT NULL DEFAULT '{}',  -- JSON: the rule's numbers
  misses      INTEGER NOT NULL DEFAULT 0,  -- evaluations in a row without the condition
  UNIQUE (rule, run_id, series_id)
);
CREATE INDEX findings_by_state ON findings(state, last_seen);

-- Every change of state or severity, for history and (later) notifications.
CREATE TABLE finding_transitions (
  transition_id INTEGER PRIMARY KEY,
  finding_id    INTEGER NOT NULL REFERENCES findings(finding_id),
  time          REAL NOT NULL,
  from_state    TEXT NOT NULL,           -- '' for a new finding
  to_state      TEXT NOT NULL,
  severity      TEXT NOT NULL,
  message       TEXT NOT NULL
);
CREATE INDEX finding_transitions_by_finding ON finding_transitions(finding_id, time);

CREATE VIEW finding_list AS
SELECT f.finding_id, f.rule, r.name AS run, COALESCE(s.tag, '') AS series, f.severity, f.state,
       f.onset_step, f.first_step, f.last_step, f.first_seen, f.last_seen, f.fired_at,
       f.resolved_at, f.message, f.cause, f.fix, f.evidence, r.run_id, f.series_id
FROM findings f JOIN runs r USING (run_id) LEFT JOIN series s ON s.series_id = f.series_id;

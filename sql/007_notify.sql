-- trainwatch store, version 7: notifications (docs/notifications.md).
--
-- The outbox: one row per message per channel. The diagnosis thread inserts rows in the same
-- transaction as the finding transitions they announce, so a transition is never recorded
-- without its messages (nor the reverse). The delivery thread is the only one that updates
-- them: a row is marked sent only after its receiver accepted it.
CREATE TABLE outbox (
  message_id      INTEGER PRIMARY KEY,
  channel         TEXT NOT NULL,           -- the channel's configured name
  idempotency_key TEXT NOT NULL UNIQUE,    -- same across retries: receivers may dedupe on it
  transition_id   INTEGER,                 -- finding_transitions row announced; NULL for tests
  finding_id      INTEGER,
  event           TEXT NOT NULL,           -- finding.firing, finding.escalated, finding.resolved, test
  payload         TEXT NOT NULL,           -- the notification, JSON (payload version 1)
  created         REAL NOT NULL,           -- unix seconds
  state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'dead')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt    REAL NOT NULL,           -- not before this time
  last_status     INTEGER,                 -- the receiver's last HTTP status, if any
  last_error      TEXT NOT NULL DEFAULT '',-- why the last attempt failed (secrets redacted)
  sent_at         REAL
);
CREATE INDEX outbox_by_channel ON outbox(channel, state, message_id);

-- The title of the finding's rule, for messages about findings whose rule is gone.
ALTER TABLE findings ADD COLUMN title TEXT NOT NULL DEFAULT '';

-- Silences: while one matches (run glob, and the rule when given), no message is queued for
-- a finding's transitions. Written by `trainwatch silence`, read by the diagnosis thread.
CREATE TABLE silences (
  silence_id INTEGER PRIMARY KEY,
  run_glob   TEXT NOT NULL,                -- GLOB pattern over run names
  rule       TEXT NOT NULL DEFAULT '',     -- '' for every rule
  created    REAL NOT NULL,
  expires    REAL NOT NULL,                -- unix seconds; `silence expire` sets it to now
  comment    TEXT NOT NULL DEFAULT ''
);

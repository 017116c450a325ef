-- trainwatch store, version 13: what waits for its group, for `trainwatch status`.
--
-- The delivery thread alone writes this table: after each pass over a grouped channel, one row
-- per group whose messages wait for group_wait or group_interval (a message waiting only for
-- its retry is not here: outbox.next_attempt says when), with when they will go. A channel's
-- rows are replaced whole, and removed when nothing of it waits.
CREATE TABLE notify_waiting (
  channel    TEXT NOT NULL,
  group_key  TEXT NOT NULL,     -- as in notify_groups: {"run":"exp/a"}, or "digest"
  messages   INTEGER NOT NULL,  -- how many wait
  oldest     REAL NOT NULL,     -- when the oldest of them was queued (unix seconds)
  due        REAL NOT NULL,     -- when the group goes, unless a critical change sends it sooner
  PRIMARY KEY (channel, group_key)
) WITHOUT ROWID;

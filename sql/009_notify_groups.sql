-- trainwatch store, version 9: grouping, repeats and digests of notifications
-- (docs/notifications.md).
--
-- The delivery thread groups a channel's pending outbox messages at send time (by run and/or
-- rule, or all of them in a digest): one send carries the whole group. What it needs to do so
-- across restarts is here, written only by the delivery thread. It also queues the repeats of
-- findings still firing (outbox rows with event finding.repeat).

-- A group send's members, frozen before the send: the message_id of the send's first message,
-- the same for every message that went (or is retrying) in it; NULL until a message's first
-- attempt. A retry, or a resend after a crash, sends the same members under the same
-- idempotency key.
ALTER TABLE outbox ADD COLUMN batch INTEGER;
-- Messages attempted before this version went alone: each its own send.
UPDATE outbox SET batch = message_id WHERE attempts > 0 OR state <> 'pending';

-- Repeats look up a finding's last message per channel.
CREATE INDEX outbox_by_finding ON outbox(finding_id, channel, state, message_id);

-- When each group of each channel last went out: its next change waits for group_interval
-- after it. group_key is a JSON object of the group's values ({"rule":"...","run":"exp/a"}),
-- or "digest".
CREATE TABLE notify_groups (
  channel         TEXT NOT NULL,
  group_key       TEXT NOT NULL,
  last_sent       REAL NOT NULL,         -- unix seconds
  last_message_id INTEGER NOT NULL,      -- the group's newest message at its last send: older
                                         -- ones still pending were left over (a send's size
                                         -- is bounded) and go at once
  PRIMARY KEY (channel, group_key)
) WITHOUT ROWID;

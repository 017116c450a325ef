// A notification: what one message says about one finding's transition, independent of the
// channel that carries it. It is stored in the outbox as JSON (the payload, version 1, which
// generic webhooks receive as is; docs/notifications.md) and rendered per channel when sent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "diagnose/rule.h"
#include "store/db.h"

namespace tw::notify {

struct Notification {
  std::string event;  // finding.firing, finding.escalated, finding.resolved, test
  double time = 0;    // when the transition happened (unix seconds)
  int64_t finding_id = 0;
  std::string rule, title, severity, state, run, series;
  std::optional<int64_t> onset_step, first_step, last_step;
  std::string message, cause, fix;
  std::string evidence = "{}";  // JSON object
  double first_seen = 0;
  std::string sparkline;  // the recent curve, as block characters (may be empty)
  // The payload it was read from (FromPayload), which webhooks receive as it was queued
  // instead of a second rendering of it; "" for a notification made here.
  std::string payload;

  diagnose::Severity level() const;  // warning when `severity` is unreadable
};

// The payload, version 1: {"version":1,"type":event,"time":...,"finding":{...},"sparkline":...},
// and "link" (the channel's link for it, ExpandLinkTemplate) when not empty.
std::string ToPayload(const Notification& n, std::string_view link = {});
// Parses a payload written by ToPayload (from the outbox).
Result<Notification> FromPayload(std::string_view json);

// The notification for transition `transition_id` of a finding, read on `db` (inside the
// transaction that recorded it). `event` is given by the caller, who knows why it notifies.
Result<Notification> LoadNotification(store::Db& db, int64_t transition_id, const std::string& event);

// A made-up finding for `trainwatch notify test`: plausible, clearly labelled a test.
Notification SampleNotification(double now);

}  // namespace tw::notify

// A notification: what one message says about one finding's transition, or about a run's
// lifecycle (run.started, run.resumed, run.finished, run.crashed), independent of the
// channel that carries it. It is stored in the outbox as JSON (the payload, version 1, which
// generic webhooks receive as is; docs/notifications.md) and rendered per channel when sent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "diagnose/rule.h"
#include "store/db.h"

namespace tw::notify {

struct Notification {
  // finding.firing, finding.escalated, finding.resolved, finding.repeat, test, or a run event:
  // run.started, run.resumed, run.finished, run.crashed. A run event fills the same fields so
  // that every channel renders it as it renders a finding: rule is the event, title "Run
  // finished", message the summary, cause how it ended, fix the checkpoint to keep and what
  // became of its findings, evidence the summary's fields (label -> text), state the kind;
  // run_event_id and run_summary (JSON) are its own.
  std::string event;
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
  int64_t run_event_id = 0;
  std::string run_summary = "{}";

  bool is_run_event() const { return event.starts_with("run."); }
  diagnose::Severity level() const;  // warning when `severity` is unreadable
};

// The payload, version 1: {"version":1,"type":event,"time":...,"finding":{...},"sparkline":...},
// and "link" (the channel's link for it, ExpandLinkTemplate) when not empty; a run event's has
// "run":{...} (docs/notifications.md) instead of "finding".
std::string ToPayload(const Notification& n, std::string_view link = {});
// Parses a payload written by ToPayload (from the outbox).
Result<Notification> FromPayload(std::string_view json);

// The notification for transition `transition_id` of a finding, read on `db` (inside the
// transaction that recorded it). `event` is given by the caller, who knows why it notifies.
Result<Notification> LoadNotification(store::Db& db, int64_t transition_id, const std::string& event);

// The notification of run event `event_id` (run_lifecycle), read on `db`; `announced` says
// whether it was recorded to be announced (old history is recorded only).
Result<Notification> LoadRunNotification(store::Db& db, int64_t event_id, bool* announced);

// The run events, and which a channel gets unless its `events` says otherwise.
const std::vector<std::string>& RunEventTypes();  // run.started, run.resumed, run.finished, run.crashed

// A made-up finding for `trainwatch notify test`: plausible, clearly labelled a test.
Notification SampleNotification(double now);

}  // namespace tw::notify

// The outbox (sql/007_notify.sql): messages waiting for their channels, durable across
// restarts. Enqueue runs inside the transaction that records a finding's transition; the
// Deliverer (deliverer.h) is the only writer of a message after that.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "notify/channel.h"
#include "store/db.h"

namespace tw::notify {

// Queues `n` for every channel that routes it, unless a silence matches; returns how many
// messages were queued. The idempotency key is "tw-<transition>-<channel>" (stable, so a
// receiver can drop the duplicate a crash mid-send may cause), or for tests
// "tw-test-<time>-<channel>". Does not begin or commit a transaction.
Result<int> Enqueue(store::Db& db, const std::vector<ChannelConfig>& channels, const Notification& n,
                    std::optional<int64_t> transition_id, double now);

// Queues the messages for transition `transition_id` of a finding (from -> to states): a
// finding that starts firing, one whose severity rose while firing, and one that resolved after
// firing are announced; pending findings and other changes are not. Returns how many queued.
Result<int> QueueTransition(store::Db& db, const std::vector<ChannelConfig>& channels,
                            int64_t transition_id, const std::string& from, const std::string& to,
                            double now);

// Queues the messages announcing run event `event_id` (run_lifecycle) for every channel whose
// `events` has it, unless a silence matches its run (and the event as its rule: `--rule
// run.finished`), or it was recorded unannounced (old history). The key is
// "tw-run-<event_id>-<channel>". Inside the transaction that records the event.
Result<int> QueueRunEvent(store::Db& db, const std::vector<ChannelConfig>& channels, int64_t event_id, double now);

// Whether a silence covers (run, rule) at `now`.
Result<bool> Silenced(store::Db& db, const std::string& run, const std::string& rule, double now);

// A silence to add: `trainwatch silence add` and the web view's form.
struct NewSilence {
  std::string run_glob;   // GLOB over run names; not empty
  std::string rule;       // "" every rule
  double seconds = 0;     // how long, from now: (0, 366 days]
  std::string comment;
};
// Checks `s` (an invalid one is kInvalidArgument saying which field and why) and inserts it;
// returns its id.
Result<int64_t> AddSilence(store::Db& db, const NewSilence& s, double now);

struct OutboxCounts {
  std::string channel;
  int64_t pending = 0, sent = 0, dead = 0;
  double oldest_pending = 0;  // created, unix seconds (0: none)
  std::string last_error;     // the newest dead or retrying message's error
};
// Per channel, for `trainwatch status`.
Result<std::vector<OutboxCounts>> CountOutbox(store::Db& db);

// A group whose messages wait for group_wait or group_interval (notify_waiting, as the
// delivery thread last wrote it), for `trainwatch status`.
struct WaitingGroup {
  std::string channel, group;  // group: {"run":"exp/a"} or "digest"
  int64_t messages = 0;
  double oldest = 0, due = 0;  // unix seconds
};
// Every channel's, by channel and due time. A store older than version 13: none.
Result<std::vector<WaitingGroup>> ListWaiting(store::Db& db);

}  // namespace tw::notify

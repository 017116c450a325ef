// Delivery: sends the outbox's pending messages through their channels, one channel's messages
// in the order they were queued (a resolution never overtakes its firing), each channel at
// most once per its rate-limit interval. A message is marked sent only once its receiver
// accepted it (the marks of consecutive sends are written in one transaction, within
// max_unmarked sends and max_unmarked_seconds); a crash between the receiver's answer and that
// mark sends it again once after the restart, under the same key (the idempotency key lets
// receivers drop it). Failures retry with capped
// exponential backoff and jitter, or after the receiver's Retry-After; a message older than
// max_age, or one its receiver refused for good, is dead: kept, logged, shown by `status`.
//
// Grouping (docs/notifications.md): a channel's pending messages with the same group key (by
// run and/or rule; every message of the channel in a digest) go as ONE send once the group is
// due: its oldest waiting message's time + group_wait, but not before the group's last send +
// group_interval (notify_groups). Critical means now: a group holding a critical change (a
// finding firing or escalated at critical) is due at once, unless it sent one within
// group_interval; what follows joins its next send as usual. A send's members are frozen in the outbox (`batch`) before it
// is attempted, so a retry, or a resend after a crash, carries the same messages under the same
// key; its messages become sent, pending or dead together. A finding still firing whose last
// message on a channel went out repeat_interval ago gets a finding.repeat message queued.
//
// Not thread-safe: owned by the daemon's delivery thread (or a CLI command). Time is passed
// in, so tests drive retries and rate limits with their own clock.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "notify/channel.h"
#include "store/db.h"

namespace tw::notify {

struct DeliveryOptions {
  double max_age_seconds = 24 * 3600;  // then a message is dead
  double backoff_initial_seconds = 0.5;
  double backoff_factor = 1.5;
  double backoff_max_seconds = 60;
  double jitter = 0.2;  // each delay is scaled by a uniform factor in [1 - jitter, 1 + jitter]
  uint64_t seed = 0;    // 0: from the clock
  int max_per_channel_per_run = 100;  // bounds one RunOnce, so Stop() is heard
  int max_batch = 100;                // messages in one group send; the rest follow at once
  // Pending messages read per channel per RunOnce; an ungrouped channel reads only
  // max_per_channel_per_run (each is its own send, in order), unless a frozen send is among them.
  int max_scan = 5000;
  double repeat_check_seconds = 60;   // a silenced finding's repeat is looked at again after this
  // Outcomes are marked in the outbox together, one transaction for up to this many sends or
  // this long, and always before RunOnce returns: what a crash can send twice (once more,
  // under the same key) is bounded by them.
  int max_unmarked = 64;
  double max_unmarked_seconds = 0.25;
};

struct Attempt {
  int64_t message_id = 0;             // the send's first message
  std::vector<int64_t> message_ids;   // all of its messages, in queue order (one unless grouped)
  std::string key;                    // the idempotency key it was sent with
  std::string channel;
  SendResult result;
  std::string state;         // after the attempt: sent, pending (will retry), dead
  double next_attempt = 0;   // when pending
};

class Deliverer {
 public:
  // Opens its own read-write connection. Pending messages of channels not in `channels`
  // (removed or renamed in the config) are marked dead, with that reason.
  static Result<std::unique_ptr<Deliverer>> Open(const std::string& db_path,
                                                 std::vector<std::unique_ptr<Channel>> channels,
                                                 DeliveryOptions options = {});

  // Queues the repeats due at `now`, then attempts what is due; returns the attempts made.
  Result<std::vector<Attempt>> RunOnce(double now);
  // When RunOnce has something to do next (unix seconds; +inf when the outbox is empty).
  // Valid after RunOnce; new messages queued since are not known until the next one.
  double next_due() const { return next_due_; }

  // The delay before retry number `attempts` (1-based), before jitter.
  static double Backoff(const DeliveryOptions& o, int64_t attempts);

 private:
  struct Row;
  struct Unit;
  Deliverer(std::unique_ptr<store::Db> db, std::vector<std::unique_ptr<Channel>> channels,
            DeliveryOptions options);
  Status Prepare();
  Status RunChannel(Channel& ch, double now, std::vector<Attempt>* out);
  Status Deliver(Channel& ch, Unit& u, double now, std::vector<Attempt>* out);
  Result<bool> CriticalIsNews(const ChannelConfig& c, const Unit& u, double since);
  Status QueueRepeats(double now);
  Status Mark(int64_t id, const std::string& state, int64_t attempts, double next,
              const SendResult& res, double now);
  Status FlushOutcomes();
  // A group whose messages wait for group_wait or group_interval (notify_waiting).
  struct Waiting {
    std::string group;
    int64_t messages = 0;
    double oldest = 0, due = 0;
    bool operator==(const Waiting&) const = default;
  };
  Status RecordWaiting(const std::string& channel, std::vector<Waiting> waiting);

  std::unique_ptr<store::Db> db_;
  store::Stmt pending_;     // a channel's pending messages, oldest first (without payloads)
  store::Stmt payload_;     // one message's payload
  store::Stmt freeze_;      // a message joins a send
  store::Stmt update_;      // an attempt's outcome
  store::Stmt group_get_;   // notify_groups' last_sent
  store::Stmt group_put_;
  store::Stmt critical_sent_;  // whether a group sent a critical change since a time
  store::Stmt firing_;      // repeats: firing findings and their last message sent on a channel
  store::Stmt repeat_;      // queues a repeat
  store::Stmt waiting_clear_, waiting_put_;  // notify_waiting
  store::Stmt groups_expire_;  // forgets groups' sends older than their interval (and an hour)
  std::vector<std::unique_ptr<Channel>> channels_;
  DeliveryOptions options_;
  std::mt19937_64 rng_;
  std::map<std::string, double> next_allowed_;  // channel -> earliest next send (rate limit, retries)
  double next_due_ = 0;
  double next_repeat_check_ = 0;  // when repeats are next looked for (0: at once)
  bool repeats_changed_ = false;  // a message went out on a channel that repeats
  std::map<std::string, std::vector<Waiting>> waiting_;  // channel -> as last written
  std::map<std::string, double> next_groups_expiry_;     // channel -> when to expire groups next
  // Sends whose outcomes are not marked in the outbox yet (FlushOutcomes).
  struct Outcome {
    std::string channel;
    std::vector<int64_t> ids;
    std::string state;
    int64_t attempts = 0;
    double next = 0, now = 0;
    SendResult result;
    int64_t newest = 0;             // the group's newest message when it was sent
    std::set<std::string> groups;   // the groups whose last send this was
  };
  std::vector<Outcome> outcomes_;
  std::chrono::steady_clock::time_point first_outcome_;
};

}  // namespace tw::notify

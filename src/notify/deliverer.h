// Delivery: sends the outbox's pending messages through their channels, one channel's messages
// in the order they were queued (a resolution never overtakes its firing), each channel at
// most once per its rate-limit interval. A message is marked sent only once its receiver
// accepted it; a crash between the receiver's answer and that mark sends it again once after
// the restart (the idempotency key lets receivers drop it). Failures retry with capped
// exponential backoff and jitter, or after the receiver's Retry-After; a message older than
// max_age, or one its receiver refused for good, is dead: kept, logged, shown by `status`.
//
// Not thread-safe: owned by the daemon's delivery thread (or a CLI command). Time is passed
// in, so tests drive retries and rate limits with their own clock.
#pragma once

#include <map>
#include <memory>
#include <random>
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
};

struct Attempt {
  int64_t message_id = 0;
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

  // Attempts what is due at `now`; returns the attempts made.
  Result<std::vector<Attempt>> RunOnce(double now);
  // When RunOnce has something to do next (unix seconds; +inf when the outbox is empty).
  // Valid after RunOnce; new messages queued since are not known until the next one.
  double next_due() const { return next_due_; }

  // The delay before retry number `attempts` (1-based), before jitter.
  static double Backoff(const DeliveryOptions& o, int64_t attempts);

 private:
  Deliverer(std::unique_ptr<store::Db> db, store::Stmt head, store::Stmt update,
            std::vector<std::unique_ptr<Channel>> channels, DeliveryOptions options);
  Status Record(int64_t id, const SendResult& r, int64_t attempts, double created, double now, Attempt* a);

  std::unique_ptr<store::Db> db_;
  store::Stmt head_;    // a channel's oldest pending message
  store::Stmt update_;  // an attempt's outcome
  std::vector<std::unique_ptr<Channel>> channels_;
  DeliveryOptions options_;
  std::mt19937_64 rng_;
  std::map<std::string, double> next_allowed_;  // channel -> earliest next send (rate limit)
  double next_due_ = 0;
};

}  // namespace tw::notify

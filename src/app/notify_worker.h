// The delivery thread: owns a notify::Deliverer (its own read-write connection, which writes
// only outbox rows' delivery state) and sends what the diagnosis thread queued. It sleeps until
// the next message is due, a Wake() (the diagnosis thread queued something), a new
// configuration, or Stop(). A send in progress is not interrupted: Stop() waits for it (at
// most the channel's timeout); a message cut off by a crash is sent again after the restart.
//
// Nothing disables delivery for good: when the outbox cannot be opened (the store's write lock
// held by another process past the busy timeout, a full disk, ...) or a delivery pass fails,
// the thread retries with backoff (1 s doubling to 30 s), logs each condition once when it
// starts and once when it clears, and reports it through the condition sink (the daemon's
// lock file, which `trainwatch status` shows) while it lasts.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/config.h"
#include "notify/deliverer.h"

namespace tw::app {

class NotifyWorker {
 public:
  explicit NotifyWorker(std::string db_path) : db_path_(std::move(db_path)) {}
  ~NotifyWorker() { Stop(); }

  // Builds the channels (a bad URL is refused here, before the config is accepted).
  Status Configure(const Config& config);
  void Start();
  void Stop();
  void Wake();  // thread-safe
  // Called on the delivery thread with what delivery waits on ("" once it no longer waits).
  // Set before Start().
  void SetConditionSink(std::function<void(const std::string&)> sink) { sink_ = std::move(sink); }

 private:
  void Loop();
  void Open(double now);
  // A failure (or, with ok, a success) of opening or of a pass: logs a new condition once,
  // its end once, and schedules the next try.
  void Report(const Status& st, const char* what, double now);

  std::string db_path_;
  std::thread thread_;
  std::mutex mu_;  // guards the fields below it
  std::condition_variable cv_;
  bool stop_ = false;
  bool woken_ = false;
  struct Pending {
    std::vector<notify::ChannelConfig> channels;  // checked by Configure; built at each open
    notify::DeliveryOptions options;
  };
  std::optional<Pending> pending_;
  // The delivery thread's:
  std::optional<Pending> wanted_;                 // the configuration to deliver with
  std::unique_ptr<notify::Deliverer> deliverer_;  // open: wanted_'s channels on the store
  std::function<void(const std::string&)> sink_;
  std::string condition_;  // what delivery waits on now ("" when all is well)
  double condition_since_ = 0;
  int failures_ = 0;       // in a row, for the backoff
  double retry_at_ = 0;    // unix seconds: the next try after a failure
};

}  // namespace tw::app

// The delivery thread: owns a notify::Deliverer (its own read-write connection, which writes
// only outbox rows' delivery state) and sends what the diagnosis thread queued. It sleeps until
// the next message is due, a Wake() (the diagnosis thread queued something), a new
// configuration, or Stop(). A send in progress is not interrupted: Stop() waits for it (at
// most the channel's timeout); a message cut off by a crash is sent again after the restart.
#pragma once

#include <condition_variable>
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

 private:
  void Loop();

  std::string db_path_;
  std::thread thread_;
  std::mutex mu_;  // guards the fields below it
  std::condition_variable cv_;
  bool stop_ = false;
  bool woken_ = false;
  struct Pending {
    std::vector<std::unique_ptr<notify::Channel>> channels;
    notify::DeliveryOptions options;
  };
  std::optional<Pending> pending_;
  std::unique_ptr<notify::Deliverer> deliverer_;  // the delivery thread's
};

}  // namespace tw::app

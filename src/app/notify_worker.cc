#include "app/notify_worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/clock.h"
#include "base/log.h"

namespace tw::app {

Status NotifyWorker::Configure(const Config& config) {
  Pending p;
  for (const notify::ChannelConfig& c : EffectiveChannels(config)) {
    Result<std::unique_ptr<notify::Channel>> ch = notify::MakeChannel(c);
    if (!ch.ok()) return InvalidArgument(config.origin + ": " + ch.status().message());
    p.channels.push_back(std::move(*ch));
  }
  p.options.max_age_seconds = config.notify_max_age_seconds;
  std::lock_guard lock(mu_);
  pending_ = std::move(p);
  woken_ = true;
  cv_.notify_all();
  return Status::Ok();
}

void NotifyWorker::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void NotifyWorker::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NotifyWorker::Wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

void NotifyWorker::Loop() {
  for (;;) {
    std::optional<Pending> next;
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      next.swap(pending_);
      woken_ = false;
    }
    if (next) {
      deliverer_.reset();
      std::string names;
      for (const auto& c : next->channels) names += (names.empty() ? "" : ", ") + c->config().name;
      Result<std::unique_ptr<notify::Deliverer>> d =
          notify::Deliverer::Open(db_path_, std::move(next->channels), next->options);
      if (d.ok()) {
        deliverer_ = std::move(*d);
        log::Info("notify: delivering to " + names);
      } else {
        log::Error("notify: delivery disabled: " + d.status().message());
      }
    }
    double wait = 5.0;  // the outbox is re-read at least this often (a CLI may queue too)
    if (deliverer_) {
      Result<std::vector<notify::Attempt>> done = deliverer_->RunOnce(UnixNow());
      if (!done.ok()) log::Warning("notify: " + done.status().message());
      if (done.ok() && !done->empty()) wait = 0;  // a channel may have more
      else wait = std::clamp(deliverer_->next_due() - UnixNow(), 0.0, wait);
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(wait), [this] { return stop_ || woken_; });
  }
}

}  // namespace tw::app

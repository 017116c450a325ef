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
    p.channels.push_back(c);
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

void NotifyWorker::Report(const Status& st, const char* what, double now) {
  if (st.ok()) {
    failures_ = 0;
    retry_at_ = 0;
    if (condition_.empty()) return;
    log::Info("notify: delivering again after " + std::to_string(std::llround(now - condition_since_)) +
              " s (it waited on: " + condition_ + ")");
    condition_.clear();
    if (sink_) sink_("");
    return;
  }
  failures_++;
  const double delay = std::min(30.0, std::pow(2.0, std::min(failures_ - 1, 5)));
  retry_at_ = now + delay;
  const std::string condition = std::string(what) + ": " + st.message();
  if (condition != condition_) {
    // Once per condition, not once per try: a store locked for an hour is one line.
    log::Error("notify: " + condition + "; delivery waits, retrying with backoff (at least every 30 s); "
               "messages stay queued");
    if (condition_.empty()) condition_since_ = now;
    condition_ = condition;
  }
  if (sink_) sink_(condition + "; retrying in " + std::to_string(static_cast<int>(std::ceil(delay))) + " s");
}

void NotifyWorker::Open(double now) {
  std::vector<std::unique_ptr<notify::Channel>> channels;
  std::string names;
  for (const notify::ChannelConfig& c : wanted_->channels) {
    Result<std::unique_ptr<notify::Channel>> ch = notify::MakeChannel(c);
    if (!ch.ok()) return Report(ch.status(), "cannot build a channel", now);
    channels.push_back(std::move(*ch));
    names += (names.empty() ? "" : ", ") + c.name;
  }
  Result<std::unique_ptr<notify::Deliverer>> d =
      notify::Deliverer::Open(db_path_, std::move(channels), wanted_->options);
  if (!d.ok()) return Report(d.status(), "cannot open the outbox", now);
  deliverer_ = std::move(*d);
  log::Info("notify: delivering to " + names);
  Report(Status::Ok(), "", now);
}

void NotifyWorker::Loop() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      if (pending_) {
        wanted_ = std::move(pending_);
        pending_.reset();
        deliverer_.reset();
        retry_at_ = 0;  // a new configuration is tried at once
      }
      woken_ = false;
    }
    double wait = 5.0;  // the outbox is re-read at least this often (a CLI may queue too)
    double now = UnixNow();
    if (wanted_ && !deliverer_ && now >= retry_at_) Open(now);
    now = UnixNow();
    if (deliverer_ && now >= retry_at_) {
      Result<std::vector<notify::Attempt>> done = deliverer_->RunOnce(now);
      Report(done.status(), "a delivery pass failed", UnixNow());
      if (done.ok() && !done->empty()) wait = 0;  // a channel may have more
      else if (done.ok()) wait = std::clamp(deliverer_->next_due() - UnixNow(), 0.0, wait);
    }
    if (retry_at_ > 0) wait = std::clamp(retry_at_ - UnixNow(), 0.0, wait);
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(wait), [this] { return stop_ || woken_; });
  }
}

}  // namespace tw::app

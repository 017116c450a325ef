#include "app/work_queue.h"

namespace tw::app {

bool WorkQueue::Post(const std::string& path, Lane lane) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    auto [it, fresh] = queued_.try_emplace(path, lane);
    if (!fresh) {
      if (it->second == lane || lane == Lane::kHistory) return false;
      it->second = Lane::kLive;  // promoted; its history_ entry is now stale
    }
    Of(lane).push_back(path);
  }
  cv_.notify_one();
  return true;
}

std::optional<WorkQueue::Item> WorkQueue::Take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return closed_ || !queued_.empty(); });
  if (closed_) return std::nullopt;
  for (Lane lane : {Lane::kLive, Lane::kHistory}) {
    std::deque<std::string>& q = Of(lane);
    while (!q.empty()) {
      std::string p = std::move(q.front());
      q.pop_front();
      auto it = queued_.find(p);
      if (it == queued_.end() || it->second != lane) continue;  // stale: promoted to live
      queued_.erase(it);
      ++in_hand_;
      return Item{std::move(p), lane};
    }
  }
  return std::nullopt;
}

void WorkQueue::Done() {
  std::lock_guard lock(mu_);
  if (in_hand_ > 0) --in_hand_;
}

bool WorkQueue::Drained() const {
  std::lock_guard lock(mu_);
  return queued_.empty() && in_hand_ == 0;
}

bool WorkQueue::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void WorkQueue::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

size_t WorkQueue::size() const {
  std::lock_guard lock(mu_);
  return queued_.size();
}

size_t WorkQueue::live_size() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [path, lane] : queued_) n += lane == Lane::kLive;
  return n;
}

}  // namespace tw::app

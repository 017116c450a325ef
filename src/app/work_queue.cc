#include "app/work_queue.h"

namespace tw::app {

bool WorkQueue::Post(const std::string& path) {
  {
    std::lock_guard lock(mu_);
    if (closed_ || !queued_.insert(path).second) return false;
    order_.push_back(path);
  }
  cv_.notify_one();
  return true;
}

std::optional<std::string> WorkQueue::Take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return closed_ || !order_.empty(); });
  if (closed_ || order_.empty()) return std::nullopt;
  std::string p = std::move(order_.front());
  order_.pop_front();
  queued_.erase(p);
  return p;
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
  return order_.size();
}

}  // namespace tw::app

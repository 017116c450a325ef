// The hand-off from the I/O thread to the writer thread: paths of files that may have
// changed. Posting a path already queued is a no-op (coalescing: a file appended a thousand
// times between two turns is read once). Taking is round-robin: a file with more to read
// goes to the back, so one huge backfill does not starve live runs. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

namespace tw::app {

class WorkQueue {
 public:
  // Returns false if the path was already queued.
  bool Post(const std::string& path);
  // Waits up to `timeout` for a path; nullopt when none came or the queue is closed.
  std::optional<std::string> Take(std::chrono::milliseconds timeout);
  void Close();
  bool closed() const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> order_;
  std::unordered_set<std::string> queued_;
  bool closed_ = false;
};

}  // namespace tw::app

// The hand-off from the I/O thread to the writer thread: paths of files that may have
// changed. Posting a path already queued is a no-op (coalescing: a file appended a thousand
// times between two turns is read once). Two lanes: kLive for files being written now (an
// inotify event, a recent mtime) and kHistory for the rest (the startup backfill, old runs).
// Take() serves live first, so a run's NaN is read before a terabyte of history is; within a
// lane it is round-robin: a file with more to read goes to the back. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace tw::app {

enum class Lane { kLive, kHistory };

class WorkQueue {
 public:
  struct Item {
    std::string path;
    Lane lane = Lane::kHistory;
  };

  // Returns false if the path was already queued. Posting a path queued in kHistory to kLive
  // moves it to the back of kLive (it is being written now); the other way round is a no-op.
  bool Post(const std::string& path, Lane lane);
  // Waits up to `timeout` for a path; nullopt when none came or the queue is closed. A path
  // taken counts as in hand until Done().
  std::optional<Item> Take(std::chrono::milliseconds timeout);
  // The taker is through with a path Take() gave it (a re-post of it, if any, already made).
  void Done();
  // Nothing queued and nothing in hand: every path posted so far has been read. (The queue's
  // size and a taker's own "waiting" flag cannot say it together: between Take() returning the
  // last path and the taker saying it is busy, both would read idle.)
  bool Drained() const;
  void Close();
  bool closed() const;
  size_t size() const;
  size_t live_size() const;

 private:
  std::deque<std::string>& Of(Lane lane) { return lane == Lane::kLive ? live_ : history_; }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> live_, history_;
  // Each queued path and its lane. A path moved to kLive leaves a stale copy in history_,
  // skipped when it comes up (cheaper than erasing from the middle of a deque).
  std::unordered_map<std::string, Lane> queued_;
  size_t in_hand_ = 0;  // taken and not Done()
  bool closed_ = false;
};

}  // namespace tw::app

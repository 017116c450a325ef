// Recursive inotify through Boost.Asio: a posix::stream_descriptor on the inotify fd, read on
// the I/O thread only. It turns kernel events into "this event file may have changed" (new,
// appended, closed, moved, deleted) and adds watches to directories as they appear, scanning
// a new directory for files already inside (they may be written before the watch exists).
//
// inotify is a hint: when the queue overflows or the per-user watch limit is hit the watcher
// says so (degraded()) and the periodic rescan carries on alone.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace tw::watch {

class InotifyWatcher {
 public:
  using FileFn = std::function<void(const std::string& path)>;
  using OverflowFn = std::function<void()>;

  InotifyWatcher(boost::asio::io_context& io, FileFn on_file, OverflowFn on_overflow);
  ~InotifyWatcher();

  Status Start();
  // Watches `dir` and every directory below it. Returns the event files found inside
  // directories that were not watched before (the caller treats them as changed).
  std::vector<std::string> AddTree(const std::string& dir);
  // Watches each of `dirs` not yet watched (the rescan's way of catching directories whose
  // creation event was missed). Returns how many were added.
  size_t EnsureWatched(const std::vector<std::string>& dirs);
  // Stops watching `root` and everything below it.
  void RemoveTree(const std::string& root);

  size_t watch_count() const { return wd_to_dir_.size(); }
  bool degraded() const { return !degraded_reason_.empty(); }
  const std::string& degraded_reason() const { return degraded_reason_; }

 private:
  void ReadSome();
  void Handle(int wd, uint32_t mask, const std::string& name);
  bool AddOne(const std::string& dir);

  boost::asio::posix::stream_descriptor fd_;
  FileFn on_file_;
  OverflowFn on_overflow_;
  std::unordered_map<int, std::string> wd_to_dir_;
  std::unordered_map<std::string, int> dir_to_wd_;
  std::vector<char> buf_;
  std::string degraded_reason_;
};

}  // namespace tw::watch

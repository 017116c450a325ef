// One daemon per store. Two daemons on one store would both deliver the outbox (every message
// twice) and race each other's writes, so the daemon holds an open-file-description write lock
// (fcntl F_OFD_SETLK) on "<store>.lock" beside the store for its whole life. The kernel drops
// it however the process ends (kill -9 too): a stale file never blocks a restart, and there
// is no pid to check. `trainwatch status` asks the kernel whether it is held (F_OFD_GETLK,
// which takes nothing, so it can never make a starting daemon think it has company).
//
// The file also carries what the daemon is waiting on when it cannot write that into the store
// (someone else holds the store's write lock): its pid, then one line per condition. Only
// shown while the lock is held, so a crashed daemon's last words are never taken as current.
//
// Threads: Acquire on the I/O thread at start; SetCondition from any thread (a mutex guards
// the file's rewrites); the destructor on the I/O thread after the other threads stopped.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"

namespace tw::app {

class InstanceLock {
 public:
  // The lock on `db_path` + ".lock", created if missing. kBusy (the message names the other
  // daemon's pid) when another process holds it; kReadOnly or kIo when the file cannot be made.
  static Result<std::unique_ptr<InstanceLock>> Acquire(const std::string& db_path);
  ~InstanceLock();  // releases the lock (and empties the file)
  InstanceLock(const InstanceLock&) = delete;
  InstanceLock& operator=(const InstanceLock&) = delete;

  // Sets the condition `key` (e.g. "notify") to `text`, or clears it with "". It keeps the
  // time it was first set while the text changes. Thread-safe.
  void SetCondition(const std::string& key, const std::string& text);

  struct Condition {
    double since = 0;  // unix seconds
    std::string text;
  };

 private:
  InstanceLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  void Rewrite();  // with mu_ held

  const int fd_;
  const std::string path_;
  std::mutex mu_;  // guards conditions_ and the file's content
  std::map<std::string, Condition> conditions_;
};

// Whether a daemon holds `db_path`'s lock, and what it says about itself. kUnknown when the
// lock file is missing (no daemon of this version ever ran there) or this user may not read it
// (the daemon runs as another user): nothing is claimed then.
struct LiveDaemon {
  enum class State { kUnknown, kStopped, kRunning };
  State state = State::kUnknown;
  std::string pid;                                             // kRunning only
  std::map<std::string, InstanceLock::Condition> conditions;  // kRunning only
};
LiveDaemon ReadLiveDaemon(const std::string& db_path);

}  // namespace tw::app

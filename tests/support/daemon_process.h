// Real-process helpers for the daemon tests: spawn `trainwatch` with its stderr captured to a
// file, signal it, wait for it with a deadline, and always kill and reap it (RAII), so a failed
// assertion never leaves a daemon behind. Plus polling with a deadline, and a receiver for the
// sd_notify datagrams the daemon sends to $NOTIFY_SOCKET.
#pragma once

#include <sys/types.h>

#include <csignal>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tw::testing {

// Calls `pred` every `interval` until it returns true or `timeout` has passed; returns
// whether it did. The predicate is always tried once more at the deadline.
bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
             std::chrono::milliseconds interval = std::chrono::milliseconds(50));

// One child process. The destructor SIGKILLs and reaps it if it is still there.
class ChildProcess {
 public:
  struct Options {
    std::string stderr_path;             // appended to; "" for /dev/null
    std::string stdout_path;             // appended to; "" for /dev/null
    // "KEY=VALUE": added to (or replacing in) the environment; "KEY" alone: removed from it.
    std::vector<std::string> env_set;
    // The child leads a process group of its own, and KillAndReap kills the whole group: for a
    // program that forks helpers of its own (Chromium's zygote, renderers, GPU process), so
    // none of them outlives the test.
    bool own_process_group = false;
  };

  ChildProcess() = default;
  ChildProcess(const std::vector<std::string>& argv, const Options& options);
  ~ChildProcess();
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // True until the child has been reaped (whether or not it still runs).
  bool alive() const { return pid_ > 0; }
  void Signal(int sig) const;
  // Waits up to `timeout` for the child to exit; the raw wait status, or nullopt if it still
  // runs. Once reaped, returns the same status again.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // SIGKILL (if not reaped yet; its whole group with own_process_group) and reap; the raw
  // wait status.
  int KillAndReap();

 private:
  pid_t pid_ = -1;
  bool own_process_group_ = false;
  std::optional<int> status_;
};

// `trainwatch daemon ARGS...` with stderr captured to `log_path`. The environment is the test's
// minus NOTIFY_SOCKET / WATCHDOG_USEC / WATCHDOG_PID (a test run under systemd must not have its
// daemons talk to the real manager), plus `env`.
class DaemonProcess {
 public:
  DaemonProcess(const std::vector<std::string>& args, std::string log_path,
                const std::vector<std::string>& env = {});

  ChildProcess& process() { return child_; }
  pid_t pid() const { return child_.pid(); }
  void Signal(int sig) const { child_.Signal(sig); }
  std::optional<int> Wait(std::chrono::milliseconds timeout) { return child_.Wait(timeout); }
  // SIGTERM, then up to `timeout` for it to exit: its raw wait status (0: a clean exit 0), or
  // nullopt if it still runs.
  std::optional<int> Stop(std::chrono::milliseconds timeout) {
    Signal(SIGTERM);
    return Wait(timeout);
  }
  int KillAndReap() { return child_.KillAndReap(); }

  // All the daemon wrote to stderr so far.
  std::string Log() const;
  // Polls the log until it contains `text`.
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout) const;

 private:
  std::string log_path_;
  ChildProcess child_;
};

// An AF_UNIX datagram socket bound to a path, standing in for systemd's notify socket.
class NotifySocket {
 public:
  explicit NotifySocket(std::string path);
  ~NotifySocket();
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& path() const { return path_; }
  // The next datagram, waiting up to `timeout`; nullopt when none came.
  std::optional<std::string> Receive(std::chrono::milliseconds timeout);
  // Receives datagrams until one contains `line` as a whole line (e.g. "READY=1"); every
  // datagram received (including that one) is appended to `seen` when given.
  std::optional<std::string> WaitForLine(const std::string& line, std::chrono::milliseconds timeout,
                                         std::vector<std::string>* seen = nullptr);

 private:
  std::string path_;
  int fd_ = -1;
};

// True if `datagram` has `line` as one of its newline-separated lines.
bool HasLine(const std::string& datagram, const std::string& line);

}  // namespace tw::testing

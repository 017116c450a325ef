// The systemd notify protocol (sd_notify(3)), written out: one datagram per message to the
// AF_UNIX socket named by $NOTIFY_SOCKET ("@..." is the abstract namespace). Without
// $NOTIFY_SOCKET every call is a no-op, so the daemon runs the same outside systemd.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tw::app {

class Notifier {
 public:
  static Notifier FromEnvironment();  // reads NOTIFY_SOCKET and WATCHDOG_USEC / WATCHDOG_PID
  Notifier() = default;
  Notifier(Notifier&& o) noexcept;
  Notifier& operator=(Notifier&& o) noexcept;
  ~Notifier();

  bool enabled() const { return fd_ >= 0; }
  // Sends e.g. "READY=1\nSTATUS=watching 3 runs". Returns false if it could not be sent.
  bool Send(std::string_view message);
  // The watchdog interval systemd expects pings within (0: no watchdog).
  int64_t watchdog_usec() const { return watchdog_usec_; }

 private:
  int fd_ = -1;
  std::string address_;
  int64_t watchdog_usec_ = 0;
};

}  // namespace tw::app

#include "app/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace tw::app {

Notifier Notifier::FromEnvironment() {
  Notifier n;
  const char* sock = std::getenv("NOTIFY_SOCKET");
  if (sock && *sock && (sock[0] == '/' || sock[0] == '@') &&
      std::strlen(sock) < sizeof(sockaddr_un::sun_path)) {
    n.fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    n.address_ = sock;
  }
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  // WATCHDOG_PID, when set, names the process the watchdog is meant for.
  if (usec && (!pid || std::atoll(pid) == static_cast<long long>(::getpid())))
    n.watchdog_usec_ = std::atoll(usec);
  return n;
}

Notifier::Notifier(Notifier&& o) noexcept
    : fd_(o.fd_), address_(std::move(o.address_)), watchdog_usec_(o.watchdog_usec_) {
  o.fd_ = -1;
}

Notifier& Notifier::operator=(Notifier&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    address_ = std::move(o.address_);
    watchdog_usec_ = o.watchdog_usec_;
    o.fd_ = -1;
  }
  return *this;
}

Notifier::~Notifier() {
  if (fd_ >= 0) ::close(fd_);
}

bool Notifier::Send(std::string_view message) {
  if (fd_ < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, address_.data(), address_.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_.size());
  if (address_[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  return ::sendto(fd_, message.data(), message.size(), MSG_NOSIGNAL,
                  reinterpret_cast<const sockaddr*>(&addr), len) ==
         static_cast<ssize_t>(message.size());
}

}  // namespace tw::app

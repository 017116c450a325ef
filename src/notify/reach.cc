#include "notify/reach.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "notify/email_channel.h"
#include "notify/url.h"

namespace tw::notify {
namespace {

using Kind = Reachability::Kind;

// One TCP connect to `addr`, given up after `timeout_ms`.
Kind Connect(const addrinfo& addr, int timeout_ms, int* error) {
  const int fd = ::socket(addr.ai_family, addr.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, addr.ai_protocol);
  if (fd < 0) return *error = errno, Kind::kBlocked;
  Kind kind = Kind::kReachable;
  if (::connect(fd, addr.ai_addr, addr.ai_addrlen) != 0) {
    *error = errno;
    if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int n = ::poll(&p, 1, timeout_ms);
      socklen_t len = sizeof *error;
      if (n == 0) kind = Kind::kTimedOut, *error = ETIMEDOUT;
      else if (n < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, error, &len) != 0) kind = Kind::kRefused;
      else if (*error != 0) kind = *error == EPERM || *error == EACCES ? Kind::kBlocked : Kind::kRefused;
    } else {
      kind = errno == EPERM || errno == EACCES ? Kind::kBlocked : Kind::kRefused;
    }
  }
  ::close(fd);
  return kind;
}

}  // namespace

Reachability CheckReach(const ChannelConfig& c, double timeout_seconds) {
  Reachability r;
  std::string host, port;
  const std::string proxy = c.http.proxy ? *c.http.proxy : "";
  if (!proxy.empty()) {
    Result<Proxy> p = ParseProxy(proxy);
    if (!p.ok()) return r.detail = p.status().message(), r;
    host = p->host, port = p->port;
    r.endpoint = host + ":" + port + " (proxy)";
  } else if (c.type == "email") {
    host = c.smtp_host;
    port = std::to_string(c.smtp_port ? c.smtp_port : DefaultSmtpPort(c.tls));
  } else if (!c.url.empty()) {
    Result<Url> u = ParseUrl(c.url);
    if (!u.ok()) return r.detail = u.status().message(), r;
    if (std::string env = ProxyFromEnvironment(*u); !env.empty()) {
      if (Result<Proxy> p = ParseProxy(env); p.ok()) {
        host = p->host, port = p->port;
        r.endpoint = host + ":" + port + " (proxy from the environment)";
      }
    }
    if (host.empty()) host = u->host, port = u->port;
  }
  if (host.empty()) return r.detail = "sends nowhere over the network", r;
  if (r.endpoint.empty()) r.endpoint = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;

  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    r.kind = Kind::kUnresolved;
    r.detail = std::string("cannot resolve the host: ") + ::gai_strerror(rc);
    return r;
  }
  const int timeout_ms = static_cast<int>(timeout_seconds * 1000);
  r.kind = Kind::kRefused;
  for (const addrinfo* a = found; a; a = a->ai_next) {
    int error = 0;
    const Kind k = Connect(*a, timeout_ms, &error);
    if (k == Kind::kReachable) {
      r.kind = k;
      r.detail.clear();
      break;
    }
    // A block outranks the other failures: it is what the operator can fix here.
    if (k == Kind::kBlocked || r.kind != Kind::kBlocked) {
      r.kind = k;
      r.detail = std::strerror(error);
    }
  }
  ::freeaddrinfo(found);
  return r;
}

}  // namespace tw::notify

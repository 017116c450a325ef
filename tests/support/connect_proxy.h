// An HTTP forward proxy for tests: answers CONNECT host:port by opening a tunnel to it, on
// 127.0.0.1 port 0 (support/tunnel_server.h), and records what it was asked. It may require
// Basic credentials (Proxy-Authorization), answering 407 with a Proxy-Authenticate challenge
// otherwise, or refuse everything with 407.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tw::testing {

struct ConnectProxyOptions {
  bool refuse = false;
  std::string username, password;  // required when set: Basic base64(username:password)
};

class ConnectProxy {
 public:
  explicit ConnectProxy(bool refuse = false);
  explicit ConnectProxy(ConnectProxyOptions options);
  ~ConnectProxy();
  ConnectProxy(const ConnectProxy&) = delete;
  ConnectProxy& operator=(const ConnectProxy&) = delete;

  std::string url() const;                    // http://127.0.0.1:PORT
  std::string host_port() const;              // 127.0.0.1:PORT
  std::vector<std::string> requests() const;  // request lines received ("CONNECT h:p HTTP/1.1")
  // Each request's Proxy-Authorization header ("" without one), in the order received.
  std::vector<std::string> authorizations() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw::testing

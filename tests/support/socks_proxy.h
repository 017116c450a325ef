// A SOCKS proxy for tests, on 127.0.0.1 port 0 (support/tunnel_server.h): SOCKS5 (RFC 1928)
// with no authentication, or requiring a user name and password (RFC 1929); SOCKS4 and 4a (the
// user id checked against the user name when one is required). CONNECT only. It records each
// request's target as the client sent it: an address ("127.0.0.1:PORT") when the client
// resolved the name itself, the name ("localhost:PORT") when the proxy was to (socks5h, 4a).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tw::testing {

struct SocksProxyOptions {
  std::string username, password;  // required when set
};

struct SocksRequest {
  int version = 0;      // 4 or 5
  std::string target;   // "host:port" as asked
  std::string user;     // the SOCKS5 user name or SOCKS4 user id; "" = none
  bool granted = false;
};

class SocksProxy {
 public:
  explicit SocksProxy(SocksProxyOptions options = {});
  ~SocksProxy();
  SocksProxy(const SocksProxy&) = delete;
  SocksProxy& operator=(const SocksProxy&) = delete;

  // "socks5://127.0.0.1:PORT" for scheme "socks5"; credentials, if any, are the caller's to add.
  std::string url(const std::string& scheme = "socks5") const;
  std::string host_port() const;  // 127.0.0.1:PORT
  std::vector<SocksRequest> requests() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw::testing

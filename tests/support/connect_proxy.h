// A forward proxy for tests: answers CONNECT host:port by opening a tunnel to it (or refusing
// with 407), on 127.0.0.1 port 0, and records the targets asked for. Each connection is served
// by its own threads with blocking sockets; the destructor closes them all and joins.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tw::testing {

class ConnectProxy {
 public:
  explicit ConnectProxy(bool refuse = false);
  ~ConnectProxy();
  ConnectProxy(const ConnectProxy&) = delete;
  ConnectProxy& operator=(const ConnectProxy&) = delete;

  std::string url() const;                  // http://127.0.0.1:PORT
  std::vector<std::string> requests() const;  // request lines received ("CONNECT h:p HTTP/1.1")

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw::testing

// An HTTP/1.1 client for the web view's tests: one request on a fresh loopback connection,
// with a time limit (a hung server fails the test instead of hanging it).
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tw::testing {

struct WebReply {
  unsigned status = 0;
  std::map<std::string, std::string> headers;  // lower-cased names
  std::string body;
  boost::json::value Json() const;  // throws when the body is not JSON
};

using WebHeaders = std::vector<std::pair<std::string, std::string>>;

// Throws std::runtime_error when the connection fails or 10 s pass. `host` "" sends
// 127.0.0.1:PORT.
WebReply WebRequest(uint16_t port, const std::string& method, const std::string& target,
                    const WebHeaders& headers = {}, const std::string& body = "", const std::string& host = "");
inline WebReply WebGet(uint16_t port, const std::string& target, const WebHeaders& headers = {},
                       const std::string& host = "") {
  return WebRequest(port, "GET", target, headers, "", host);
}

}  // namespace tw::testing

// One HTTP exchange over libcurl for the object-store client: no redirects followed (an
// answer that redirects is an error the caller names), no proxy from the environment, the
// whole exchange bounded in time, and the body bounded in size (a server announcing or
// sending more than `max_body` is cut off and said so). Any thread; one call, one handle.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tw::objstore {

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  double timeout_seconds = 30;
  size_t max_body = 16 << 20;
  // Set (by another thread): the exchange is abandoned within about 100 ms (a stopping daemon
  // does not wait out a slow server).
  const std::atomic<bool>* cancel = nullptr;
};

struct HttpResponse {
  long status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order
  std::string body;
  // The first header of that (lower-case) name, or "".
  std::string Header(const std::string& name) const;
};

// kIo: the exchange failed below HTTP (refused, reset, timed out, a body over max_body),
// with curl's words; any HTTP status is a response.
Result<HttpResponse> Exchange(const HttpRequest& request);

}  // namespace tw::objstore

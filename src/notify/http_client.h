// One HTTP(S) POST at a time, for notification delivery: Boost.Beast over TCP, or over
// OpenSSL with certificate and host-name verification and SNI. Every step (resolve, connect,
// TLS handshake, write, read) is bounded by the timeout. No keep-alive: channels send at most
// a message a second, and a fresh connection cannot be a stale one.
//
// Errors are values: a Status whose message names the redacted URL and the step that failed
// ("https://hooks.slack.com/services/… : TLS handshake: certificate verify failed"). Any
// answer at all, whatever its HTTP status, is a response, not an error; judging it is the
// channel's business. Thread-compatible: each call uses its own io_context.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tw::notify {

struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;    // without brackets for IPv6 literals
  std::string port;    // explicit, or 80 / 443
  std::string target;  // path and query, at least "/"
};

// http:// and https:// only. The error never repeats the URL (it may hold a secret).
Result<Url> ParseUrl(std::string_view url);

// A URL fit for logs and error messages: scheme, host and port, and the path's first segment;
// the rest (where webhook secrets live), query and user info become "…".
//   https://hooks.slack.com/services/T0/B0/XYZ -> https://hooks.slack.com/services/…
std::string RedactUrl(std::string_view url);

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
  int status = 0;
  std::string body;
  Headers headers;
  // The first header of that name (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

struct HttpOptions {
  double timeout_seconds = 10;  // for the whole exchange
  // A forward proxy, "http://host:port": https:// URLs go through a CONNECT tunnel (TLS and
  // its verification stay end to end), http:// ones as absolute-form requests. nullopt: from
  // the environment (HTTPS_PROXY / HTTP_PROXY, lower case too, minus NO_PROXY); "": none.
  std::optional<std::string> proxy;
  std::string ca_file;          // PEM trust anchors used instead of the system's (tests, private CAs)
  std::string user_agent = "trainwatch/0.1";
  size_t max_body_bytes = 1 << 20;  // a larger answer is cut (and still a response)

  bool operator==(const HttpOptions&) const = default;
};

// The proxy the environment names for `url` ("" for none): HTTPS_PROXY or HTTP_PROXY by the
// URL's scheme (curl's names; lower case wins), unless NO_PROXY lists its host ("*", a host,
// or a domain suffix such as ".example.com"). Loopback hosts are never proxied.
std::string ProxyFromEnvironment(const Url& url);

// POSTs `body` with `headers` (Content-Type among them, if wanted) and returns the answer.
Result<HttpResponse> HttpPost(const Url& url, const Headers& headers, std::string_view body,
                              const HttpOptions& options = {});

}  // namespace tw::notify

// HTTP(S) POSTs for notification delivery, over libcurl: TLS through OpenSSL with certificate
// and host-name verification and SNI, HTTP/2 where the receiver offers it, connections kept
// and reused between posts, forward proxies (HTTP with Basic auth, SOCKS 4 and 5). One timeout
// bounds the whole exchange, from name lookup to the last byte.
//
// Errors are values: a Status whose message names the redacted URL and the step that failed
// ("https://hooks.slack.com/services/… : TLS handshake: SSL certificate problem: ..."), with
// no secret of the URL or the proxy in it. Any answer at all, whatever its HTTP status, is a
// response, not an error: judging it is the channel's business.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "notify/curl_setup.h"
#include "notify/url.h"

namespace tw::notify {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
  int status = 0;
  std::string body;
  Headers headers;  // the final answer's (not a proxy's CONNECT answer's)
  // The first header of that name (case-insensitive), or "".
  std::string Header(std::string_view name) const;
};

struct HttpOptions {
  double timeout_seconds = 10;  // for the whole exchange
  // A forward proxy (url.h's Proxy: http://, socks4://, socks4a://, socks5://, socks5h://,
  // user:password@ allowed): https:// URLs go through a tunnel (TLS and its verification stay
  // end to end), http:// ones to an HTTP proxy as absolute-form requests. nullopt: from the
  // environment (ProxyFromEnvironment); "": none. A secret when it holds a password.
  std::optional<std::string> proxy;
  std::string ca_file;          // PEM trust anchors used instead of the system's (tests, private CAs)
  std::string user_agent = "trainwatch/0.1";
  size_t max_body_bytes = 1 << 20;  // a larger answer is cut (and still a response)

  bool operator==(const HttpOptions&) const = default;
};

// One curl easy handle, and with it a cache of open connections (and TLS sessions) that later
// posts to the same receiver reuse. Not thread-safe: one thread at a time uses a client.
class HttpClient {
 public:
  HttpClient();
  Result<HttpResponse> Post(const Url& url, const Headers& headers, std::string_view body,
                            const HttpOptions& options);

 private:
  curl::Easy easy_;
};

// POSTs `body` with `headers` (Content-Type among them, if wanted) and returns the answer,
// through an HttpClient of the calling thread's own (the deliverer's thread keeps its
// connections between messages).
Result<HttpResponse> HttpPost(const Url& url, const Headers& headers, std::string_view body,
                              const HttpOptions& options = {});

}  // namespace tw::notify

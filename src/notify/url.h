// The addresses delivery talks to, checked before any traffic: a receiver's http(s):// URL, a
// proxy's URL, the proxy the environment names, and whether a host is this machine. Pure
// functions (ProxyFromEnvironment reads the environment), thread-compatible.
//
// URLs and proxy URLs may hold secrets (a webhook's path, a proxy's password): no error here
// ever repeats the text it was given.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tw::notify {

struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;    // without brackets for IPv6 literals
  std::string port;    // explicit, or 80 / 443
  std::string target;  // path and query, at least "/"
};

// http:// and https:// only, without user info.
Result<Url> ParseUrl(std::string_view url);

// The URL whole again ("https://[::1]:8443/services/T/B/X"), the port left out when it is the
// scheme's. Secret: pass it only to curl and to the scrubbing.
std::string JoinUrl(const Url& url);

// A URL fit for logs and error messages: scheme, host and port, and the path's first segment;
// the rest (where webhook secrets live), query and user info become "…".
//   https://hooks.slack.com/services/T0/B0/XYZ -> https://hooks.slack.com/services/…
std::string RedactUrl(std::string_view url);

// A forward proxy: http:// (HTTP CONNECT for TLS and SMTP, absolute-form requests for plain
// HTTP) or SOCKS (socks4, socks4a, socks5; socks5h lets the proxy resolve the host's name), with
// optional credentials (Basic for HTTP, RFC 1929 for SOCKS5, the user id for SOCKS4).
struct Proxy {
  std::string scheme;    // lower case
  std::string host;      // without brackets for IPv6 literals
  std::string port;      // explicit, or 80 (http) / 1080 (socks)
  std::string username;  // percent-decoded; "" = none
  std::string password;  // percent-decoded; a secret

  // "socks5h://proxy.corp:1080": without the credentials, for messages and for curl.
  std::string Label() const;
  // The credentials as they may show in text, for scrubbing: "user:password", the password,
  // and the base64 that Basic authentication sends. None without a password.
  std::vector<std::string> Secrets() const;
};

// "scheme://[user[:password]@]host[:port][/]". The error says what is wrong, never the text.
Result<Proxy> ParseProxy(std::string_view text);

// A host name or an IP address literal (IPv6 without brackets): what a URL's host may be.
bool IsHostName(std::string_view host);

// The proxy the environment names for `url` ("" for none): HTTPS_PROXY or HTTP_PROXY by the
// URL's scheme (curl's names; lower case wins; "proxy:3128" means http://proxy:3128), unless
// NO_PROXY lists its host ("*", a host, or a domain suffix such as ".example.com"). Loopback
// hosts are never proxied.
std::string ProxyFromEnvironment(const Url& url);

// 127.0.0.0/8, ::1 and "localhost": where plain text never leaves the machine.
bool IsLoopbackHost(std::string_view host);

}  // namespace tw::notify

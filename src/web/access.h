// Who may read the web view: loopback is open when no token is configured; a token, when
// configured, is required everywhere (Authorization: Bearer, the tw_token cookie, or a
// ?token= link that sets the cookie). Pure functions, any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tw::web {

inline constexpr const char* kCookieName = "tw_token";

// Whether `address` ("127.0.0.1", "::1", "localhost", ...) is a loopback address.
bool IsLoopback(std::string_view address);
// Whether the server may listen on `address` with `token` (empty: none), and whether the
// token can travel in a cookie (printable ASCII, no separators).
Status CheckListen(std::string_view address, std::string_view token);
// "127.0.0.1:8421", "[::1]:8421", "0.0.0.0:80" -> address and port (0: any free one).
bool ParseListen(const std::string& text, std::string* address, uint16_t* port);

// Equal without an early exit, so the time taken says nothing about where they differ.
bool TokensEqual(std::string_view a, std::string_view b);

struct AccessRequest {
  std::string_view authorization;  // the Authorization header
  std::string_view cookie;         // the Cookie header
  std::string_view query_token;    // ?token=, decoded
  std::string_view host;           // the Host header
};
enum class Access { kAllowed, kAllowedSetCookie, kUnauthorized, kBadHost };
// With no token configured, the Host header must name loopback too: a page elsewhere cannot
// read the API through a DNS name rebound to 127.0.0.1.
Access Check(std::string_view token, const AccessRequest& r);
// The Set-Cookie value that remembers `token`.
std::string TokenCookie(std::string_view token);

// The one write (POST /api/silences) must come from this server's own pages or from a script,
// never from a form on another site that a browser here was led to: its body is JSON (a
// cross-site page can send that only after a CORS preflight, which is never answered), and a
// browser's Origin and Sec-Fetch-Site, when sent, must say this server. Empty when allowed,
// else why not.
std::string CheckWriteOrigin(std::string_view content_type, std::string_view origin,
                             std::string_view fetch_site, std::string_view host);

}  // namespace tw::web

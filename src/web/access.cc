#include "web/access.h"

#include <boost/asio/ip/address.hpp>

namespace tw::web {
namespace {

// Host header "name[:port]" or "[v6]:port" without the port.
std::string_view HostName(std::string_view host) {
  if (host.starts_with('[')) {
    const size_t end = host.find(']');
    return end == std::string_view::npos ? host : host.substr(1, end - 1);
  }
  const size_t colon = host.rfind(':');
  if (colon != std::string_view::npos && host.find(':') == colon) return host.substr(0, colon);
  return host;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of cookie `name` in a Cookie header ("a=1; b=2"), or empty.
std::string_view CookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t semi = header.find(';');
    std::string_view pair = Trim(header.substr(0, semi));
    header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && Trim(pair.substr(0, eq)) == name) return Trim(pair.substr(eq + 1));
  }
  return {};
}

}  // namespace

bool IsLoopback(std::string_view address) {
  if (address == "localhost") return true;
  boost::system::error_code ec;
  const auto ip = boost::asio::ip::make_address(std::string(address), ec);
  return !ec && ip.is_loopback();
}

Status CheckListen(std::string_view address, std::string_view token) {
  for (const char c : token)
    if (c <= ' ' || c > '~' || c == ';' || c == ',' || c == '"' || c == '\\')
      return InvalidArgument("the web token must be printable ASCII without spaces, quotes, ';', ',' or '\\'");
  if (token.empty() && !IsLoopback(address))
    return InvalidArgument("the web view listens beyond loopback (" + std::string(address) +
                           ") only with a token: give --token or --token-file ([web] token)");
  return Status::Ok();
}

bool TokensEqual(std::string_view a, std::string_view b) {
  // Compares every byte of the longer one; a length difference counts as a difference.
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

Access Check(std::string_view token, const AccessRequest& r) {
  if (token.empty()) return IsLoopback(HostName(r.host)) ? Access::kAllowed : Access::kBadHost;
  constexpr std::string_view kBearer = "Bearer ";
  if (r.authorization.starts_with(kBearer) && TokensEqual(Trim(r.authorization.substr(kBearer.size())), token))
    return Access::kAllowed;
  if (!r.query_token.empty() && TokensEqual(r.query_token, token)) return Access::kAllowedSetCookie;
  const std::string_view cookie = CookieValue(r.cookie, kCookieName);
  if (!cookie.empty() && TokensEqual(cookie, token)) return Access::kAllowed;
  return Access::kUnauthorized;
}

std::string TokenCookie(std::string_view token) {
  return std::string(kCookieName) + "=" + std::string(token) + "; Path=/; HttpOnly; SameSite=Strict";
}

// "127.0.0.1:8421", "[::1]:8421", "0.0.0.0:80" -> address and port.
bool ParseListen(const std::string& s, std::string* address, uint16_t* port) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = s.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string p = s.substr(colon + 1);
  if (host.empty() || p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
  const int n = std::stoi(p);
  if (n > 65535) return false;
  *address = host;
  *port = static_cast<uint16_t>(n);
  return true;
}

std::string CheckWriteOrigin(std::string_view content_type, std::string_view origin,
                             std::string_view fetch_site, std::string_view host) {
  const std::string_view type = content_type.substr(0, content_type.find(';'));
  if (type != "application/json") return "the body must be Content-Type: application/json";
  if (!fetch_site.empty() && fetch_site != "same-origin" && fetch_site != "none")
    return "a request from another site (Sec-Fetch-Site: " + std::string(fetch_site) + ")";
  if (!origin.empty() && origin != "http://" + std::string(host))
    return "a request from another origin (" + std::string(origin) + ")";
  return "";
}

}  // namespace tw::web

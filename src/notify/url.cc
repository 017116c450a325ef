#include "notify/url.h"

#include "notify/render.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

namespace tw::notify {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A URL cut into its parts, before any of them is judged.
struct RawUrl {
  std::string scheme;          // lower-cased
  std::string_view userinfo;   // without its '@'; empty when none
  bool has_userinfo = false;
  std::string_view authority;  // host[:port], brackets kept, user info gone
  std::string_view host;       // brackets gone
  std::string_view port;       // as written; may be empty
  std::string_view path;       // may be empty
  std::string_view query;      // with its '?', may be empty
  bool has_fragment = false;
};

bool IsHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

bool IsIpv6Char(char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'; }

// Splits and checks everything but the scheme's name and the user info; the messages never
// quote the URL.
Result<RawUrl> Split(std::string_view url) {
  RawUrl u;
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos || sep == 0) return InvalidArgument("URL has no scheme");
  u.scheme = Lower(url.substr(0, sep));
  std::string_view rest = url.substr(sep + 3);
  for (char c : rest) {
    // A space, CR or LF in the target would corrupt (or forge) the request line.
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return InvalidArgument("URL contains a space or control character");
  }
  if (size_t hash = rest.find('#'); hash != std::string_view::npos) {
    u.has_fragment = true;
    rest = rest.substr(0, hash);
  }
  const size_t auth_end = std::min(rest.find('/'), rest.find('?'));
  std::string_view auth = rest.substr(0, auth_end);
  rest = auth_end == std::string_view::npos ? std::string_view() : rest.substr(auth_end);
  if (size_t at = auth.rfind('@'); at != std::string_view::npos) {
    u.has_userinfo = true;
    u.userinfo = auth.substr(0, at);
    auth = auth.substr(at + 1);
  }
  u.authority = auth;
  const size_t q = rest.find('?');
  u.path = rest.substr(0, q);
  if (q != std::string_view::npos) u.query = rest.substr(q);

  std::string_view after_host;
  if (!auth.empty() && auth.front() == '[') {
    const size_t close = auth.find(']');
    if (close == std::string_view::npos) return InvalidArgument("URL has an unclosed '[' in its host");
    u.host = auth.substr(1, close - 1);
    if (!std::all_of(u.host.begin(), u.host.end(), IsIpv6Char))
      return InvalidArgument("URL host is not a valid IPv6 address");
    after_host = auth.substr(close + 1);
  } else {
    const size_t colon = auth.find(':');
    u.host = auth.substr(0, colon);
    after_host = colon == std::string_view::npos ? std::string_view() : auth.substr(colon);
    for (char c : u.host) {
      if (!IsHostChar(c)) return InvalidArgument("URL host has a character a host name cannot have");
    }
  }
  if (u.host.empty()) return InvalidArgument("URL has no host");
  if (!after_host.empty()) {
    if (after_host.front() != ':') return InvalidArgument("URL has text after its host");
    u.port = after_host.substr(1);
    const bool digits = !u.port.empty() && u.port.size() <= 5 &&
                        std::all_of(u.port.begin(), u.port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoi(std::string(u.port)) < 1 || std::stoi(std::string(u.port)) > 65535)
      return InvalidArgument("URL port is not a number in 1..65535");
  }
  return u;
}

bool IsWebScheme(const std::string& scheme) { return scheme == "http" || scheme == "https"; }

// "%40" -> "@"; false on a '%' not followed by two hex digits.
bool PercentDecode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      *out += in[i];
      continue;
    }
    if (i + 2 >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(in[i + 2])))
      return false;
    *out += static_cast<char>(std::stoi(std::string(in.substr(i + 1, 2)), nullptr, 16));
    i += 2;
  }
  return true;
}

std::string BracketIfV6(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

std::string Env(const char* lower, const char* upper) {
  if (const char* v = std::getenv(lower); v && *v) return v;
  if (const char* v = std::getenv(upper); v && *v) return v;
  return "";
}

}  // namespace

Result<Url> ParseUrl(std::string_view url) {
  const size_t sep = url.find("://");
  if (sep == std::string_view::npos || !IsWebScheme(Lower(url.substr(0, sep))))
    return InvalidArgument("URL scheme must be http or https");
  auto raw = Split(url);
  if (!raw.ok()) return raw.status();
  // Credentials belong in a header the caller sets on purpose, not smuggled in the URL.
  if (raw->has_userinfo) return InvalidArgument("URL must not contain user info");
  Url u;
  u.scheme = raw->scheme;
  u.host = std::string(raw->host);
  u.port = raw->port.empty() ? (u.scheme == "https" ? "443" : "80") : std::string(raw->port);
  u.target = raw->path.empty() ? "/" : std::string(raw->path);
  u.target += raw->query;
  return u;
}

std::string JoinUrl(const Url& u) {
  const bool default_port = (u.scheme == "http" && u.port == "80") || (u.scheme == "https" && u.port == "443");
  return u.scheme + "://" + BracketIfV6(u.host) + (default_port ? "" : ":" + u.port) + u.target;
}

std::string RedactUrl(std::string_view url) {
  auto raw = Split(url);
  if (!raw.ok() || !IsWebScheme(raw->scheme)) return "(unparseable URL)";
  std::string out = raw->scheme + "://" + std::string(raw->authority) + "/";
  const std::string_view path = raw->path.empty() ? std::string_view() : raw->path.substr(1);
  const size_t slash = path.find('/');
  out += path.substr(0, slash);
  if (slash != std::string_view::npos)
    out += "/…";
  else if (!raw->query.empty() || raw->has_fragment)
    out += "…";
  return out;
}

std::string Proxy::Label() const { return scheme + "://" + BracketIfV6(host) + ":" + port; }

std::vector<std::string> Proxy::Secrets() const {
  if (password.empty()) return {};
  return {username + ":" + password, password, Base64(username + ":" + password)};
}

Result<Proxy> ParseProxy(std::string_view text) {
  if (text.find("://") == std::string_view::npos)
    return InvalidArgument("proxy must be a URL such as http://proxy.corp:3128 or socks5://proxy.corp:1080");
  auto raw = Split(text);
  if (!raw.ok()) return InvalidArgument("proxy " + raw.status().message());
  static const char* kSchemes[] = {"http", "socks4", "socks4a", "socks5", "socks5h"};
  if (std::none_of(std::begin(kSchemes), std::end(kSchemes), [&](const char* s) { return raw->scheme == s; }))
    return InvalidArgument("proxy scheme must be http, socks4, socks4a, socks5 or socks5h");
  if ((!raw->path.empty() && raw->path != "/") || !raw->query.empty() || raw->has_fragment)
    return InvalidArgument("proxy URL must not have a path, query or fragment");
  Proxy p;
  p.scheme = raw->scheme;
  p.host = std::string(raw->host);
  p.port = !raw->port.empty() ? std::string(raw->port) : p.scheme == "http" ? "80" : "1080";
  const size_t colon = raw->userinfo.find(':');
  if (!PercentDecode(raw->userinfo.substr(0, colon), &p.username) ||
      (colon != std::string_view::npos && !PercentDecode(raw->userinfo.substr(colon + 1), &p.password)))
    return InvalidArgument("proxy URL has a '%' not followed by two hex digits in its user info");
  if (raw->has_userinfo && p.username.empty()) return InvalidArgument("proxy URL has a password but no user name");
  return p;
}

std::string ProxyFromEnvironment(const Url& url) {
  if (IsLoopbackHost(url.host)) return "";
  std::string proxy = url.scheme == "https" ? Env("https_proxy", "HTTPS_PROXY") : Env("http_proxy", "HTTP_PROXY");
  if (proxy.empty()) return "";
  if (proxy.find("://") == std::string::npos) proxy = "http://" + proxy;  // "proxy:3128", as curl takes it
  const std::string no_proxy = Env("no_proxy", "NO_PROXY");
  const std::string host = Lower(url.host);
  for (size_t at = 0; at <= no_proxy.size();) {
    size_t comma = no_proxy.find(',', at);
    if (comma == std::string::npos) comma = no_proxy.size();
    std::string entry = Lower(no_proxy.substr(at, comma - at));
    at = comma + 1;
    entry.erase(0, entry.find_first_not_of(' '));
    entry.erase(entry.find_last_not_of(' ') + 1);
    if (entry.empty()) continue;
    if (entry == "*") return "";
    if (entry.front() == '.') entry.erase(0, 1);
    if (host == entry || (host.size() > entry.size() && host.ends_with("." + entry))) return "";
  }
  return proxy;
}

bool IsHostName(std::string_view host) {
  if (host.empty()) return false;
  if (host.find(':') != std::string_view::npos) return std::all_of(host.begin(), host.end(), IsIpv6Char);
  return std::all_of(host.begin(), host.end(), IsHostChar);
}

bool IsLoopbackHost(std::string_view host) {
  if (Lower(host) == "localhost") return true;
  const std::string h(host);
  unsigned char a[16];
  if (inet_pton(AF_INET, h.c_str(), a) == 1) return a[0] == 127;
  if (inet_pton(AF_INET6, h.c_str(), a) != 1) return false;
  static const unsigned char kLoopback6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  static const unsigned char kMapped4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(a, kLoopback6, 16) == 0 || (std::memcmp(a, kMapped4, 12) == 0 && a[12] == 127);
}

}  // namespace tw::notify

// Small text helpers every stage uses. Pure functions: any thread.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

namespace tw {

// `s` without leading and trailing whitespace (spaces, tabs, CR, LF, ...).
inline std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// `s` percent-encoded as RFC 3986 asks (unreserved characters A-Z a-z 0-9 - _ . ~ as they are,
// every other byte as %XX in upper-case hex; '/' kept when `keep_slash`): URL query values,
// and the canonical URI and query of an AWS SigV4 request.
inline std::string PercentEncode(std::string_view s, bool keep_slash = false) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                            c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// A duration: a positive number with s, m, h or d (30m, 2h, 7d) into seconds. False for
// anything else (no unit, zero, negative, not finite).
inline bool ParseDuration(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end ? end : "";
  const double mult = unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : unit == "d" ? 86400 : -1;
  if (mult < 0 || !(v > 0) || !std::isfinite(v)) return false;
  *out = v * mult;
  return true;
}

}  // namespace tw

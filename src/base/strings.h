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

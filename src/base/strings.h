// Small text helpers every stage uses. Pure functions: any thread.
#pragma once

#include <cctype>
#include <string_view>

namespace tw {

// `s` without leading and trailing whitespace (spaces, tabs, CR, LF, ...).
inline std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace tw

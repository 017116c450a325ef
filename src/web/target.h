// A request target split into its path and decoded query parameters. Pure, any thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tw::web {

struct Target {
  std::string path;                           // percent-decoded
  std::map<std::string, std::string> params;  // the last of a repeated name wins
};
// Nullopt for a malformed percent escape.
std::optional<Target> ParseTarget(std::string_view target);

}  // namespace tw::web

// Command-line flags for the CLI commands: --name VALUE, --name=VALUE, boolean --name,
// positionals; an unknown flag is an error (a typo must not be ignored).
#pragma once

#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"

namespace tw::cli {

// A minimal flag parser: --name VALUE, --name=VALUE, boolean --name, positionals.
class Flags {
 public:
  Flags(const Args& args, std::vector<std::string> with_value, std::vector<std::string> booleans)
      : with_value_(std::move(with_value)), booleans_(std::move(booleans)) {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--") {
        positionals_.insert(positionals_.end(), args.begin() + i + 1, args.end());
        break;
      }
      if (!a.starts_with("--") || a.size() == 2) {
        positionals_.push_back(a);
        continue;
      }
      std::string name = a.substr(2), value;
      bool has_inline = false;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_inline = true;
      }
      if (Is(booleans_, name)) {
        values_.emplace_back(name, "1");
      } else if (Is(with_value_, name)) {
        if (!has_inline) {
          if (i + 1 >= args.size()) {
            error_ = "--" + name + " needs a value";
            return;
          }
          value = args[++i];
        }
        values_.emplace_back(name, value);
      } else {
        error_ = "unknown option --" + name;
        return;
      }
    }
  }
  const std::string& error() const { return error_; }
  std::optional<std::string> Get(const std::string& name) const {
    for (auto it = values_.rbegin(); it != values_.rend(); ++it)
      if (it->first == name) return it->second;
    return std::nullopt;
  }
  bool Has(const std::string& name) const { return Get(name).has_value(); }
  // Every value of a repeatable flag, in order.
  std::vector<std::string> GetAll(const std::string& name) const {
    std::vector<std::string> out;
    for (const auto& [n, v] : values_)
      if (n == name) out.push_back(v);
    return out;
  }
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  static bool Is(const std::vector<std::string>& v, const std::string& n) {
    for (const auto& x : v)
      if (x == n) return true;
    return false;
  }
  std::vector<std::string> with_value_, booleans_;
  std::vector<std::pair<std::string, std::string>> values_;
  std::vector<std::string> positionals_;
  std::string error_;
};

// Prints `text` (exit 0), or `error` and `text` on stderr (exit 2).
inline int Usage(const char* text, const std::string& error = "") {
  if (!error.empty()) {
    std::cerr << "trainwatch: " << error << "\n\n" << text;
    return 2;
  }
  std::cout << text;
  return 0;
}

}  // namespace tw::cli

// libFuzzer target: arbitrary bytes as a diagnosis rule file (its "-- key: value" header).
// Checks what a parsed rule promises: an id of [A-Za-z0-9_]+, a title, parameter names of
// the same alphabet, a non-negative `for`, and the whole text kept as its SQL.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "diagnose/rule.h"
#include "fuzz_util.h"

namespace {
bool Name(const std::string& s) {
  return !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
                           std::string::npos;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tw::Result<tw::diagnose::Rule> r = tw::diagnose::ParseRule(text, "fuzz.sql");
  if (!r.ok()) {
    tw::fuzz::Check(r.status().message().starts_with("fuzz.sql"), "an error names the file");
    return 0;
  }
  tw::fuzz::Check(Name(r->id), "the id is [A-Za-z0-9_]+");
  tw::fuzz::Check(!r->title.empty(), "a rule has a title");
  tw::fuzz::Check(r->for_seconds >= 0, "for is >= 0");
  for (const auto& p : r->params) tw::fuzz::Check(Name(p.name), "a parameter name is [A-Za-z0-9_]+");
  tw::fuzz::Check(r->sql == text, "the SQL is the whole file");
  return 0;
}

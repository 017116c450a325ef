// libFuzzer target: arbitrary bytes as the daemon's TOML config file, through the guard and
// toml++ into every section's checks. Under -fsanitize=undefined this is what found toml++
// 3.3.0 reaching __builtin_unreachable() on "é" where it skips whitespace (base/toml_guard.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "app/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // A path that does not exist: relative paths resolve against it, the mode check finds no file.
  (void)tw::app::ParseConfig(text, "/nonexistent/fuzz/trainwatch.toml");
  return 0;
}

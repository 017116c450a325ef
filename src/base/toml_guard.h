// A check a config file's text passes before toml++ parses it. Debian 12's toml++ (3.3.0)
// reaches __builtin_unreachable() (undefined behaviour: in practice a wrong answer or a
// crash) when it asks whether a non-ASCII character such as "é" (U+00A1..U+0499,
// U+2C8E..U+3087, U+FB26..U+FEFE) is whitespace: its generated table misses those ranges.
// It asks wherever it skips whitespace, so this refuses, naming line and column, every
// non-ASCII byte where toml++ would look: outside strings and comments (where TOML allows
// none, so no valid file is refused), and in a multi-line basic string right after a
// backslash or after the whitespace a line-ending backslash trims. It also refuses a table
// header that does not start with a key ("[!", "[" alone on a line), which toml++ only
// asserts against (with NDEBUG, clang builds assume it: undefined behaviour again).
// Pure function: any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tw {

Status CheckTomlText(std::string_view text, const std::string& path);

}  // namespace tw

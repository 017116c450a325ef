// UTF-8 as the Unicode standard defines it, for bytes that come from outside (file and
// directory names, tags, strings in logs): what a valid sequence is, and how invalid bytes are
// replaced. Names on Linux are bytes, not text; everything that writes them where text is
// required (JSON, journald) goes through here. Pure functions: any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tw::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The character starting at `s[i]` (i < s.size()). A valid sequence sets *cp and returns its
// length (1 to 4). Otherwise returns 0 and sets *bad to the length of its maximal invalid
// subpart (at least 1): the bytes one U+FFFD stands for, as the Unicode standard (ch. 3,
// "U+FFFD substitution of maximal subparts") and WHATWG's decoder replace them. Overlongs,
// surrogates (CESU-8), code points past U+10FFFF and cut sequences are all invalid.
size_t Decode(std::string_view s, size_t i, char32_t* cp, size_t* bad);

bool IsValid(std::string_view s);

// `s` with every maximal invalid subpart replaced by U+FFFD; `s` itself when valid.
std::string MakeValid(std::string_view s);

}  // namespace tw::utf8

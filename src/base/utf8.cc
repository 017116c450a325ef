#include "base/utf8.h"

namespace tw::utf8 {

size_t Decode(std::string_view s, size_t i, char32_t* cp, size_t* bad) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) {
    *cp = lead;
    return 1;
  }
  // The length a lead byte announces, and the range its second byte must fall in: the
  // narrowed ranges are what excludes overlongs (E0, F0), surrogates (ED) and > U+10FFFF (F4).
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;
  char32_t value;
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
    value = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
    value = lead & 0x0F;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    value = lead & 0x07;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {  // a continuation byte, C0/C1 (always overlong) or F5..FF (past U+10FFFF)
    *bad = 1;
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size() || byte(k) < lo || byte(k) > hi) {
      *bad = k;  // the lead and the continuations that still fitted
      return 0;
    }
    value = (value << 6) | (byte(k) & 0x3F);
    lo = 0x80;
    hi = 0xBF;
  }
  *cp = value;
  return len;
}

bool IsValid(std::string_view s) {
  char32_t cp;
  size_t bad;
  for (size_t i = 0; i < s.size();) {
    const size_t n = Decode(s, i, &cp, &bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string MakeValid(std::string_view s) {
  if (IsValid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  char32_t cp;
  size_t bad;
  for (size_t i = 0; i < s.size();) {
    if (const size_t n = Decode(s, i, &cp, &bad); n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append(kReplacement);
      i += bad;
    }
  }
  return out;
}

}  // namespace tw::utf8

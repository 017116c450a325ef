#include "base/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "base/utf8.h"

namespace tw {

std::string JsonQuote(std::string_view v) {
  // The bytes are whatever a name or tag held: JSON must be UTF-8 (RFC 8259 section 8.1), so
  // each invalid sequence becomes U+FFFD, never a byte a strict parser rejects.
  std::string out = "\"";
  out.reserve(v.size() + 2);
  char32_t cp;
  size_t bad;
  for (size_t i = 0; i < v.size();) {
    const size_t n = utf8::Decode(v, i, &cp, &bad);
    if (n == 0) {
      out += utf8::kReplacement;
      i += bad;
      continue;
    }
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      // Valid JSON raw, but line breaks to JavaScript and to some log viewers.
      case 0x2028: out += "\\u2028"; break;
      case 0x2029: out += "\\u2029"; break;
      default:
        if (cp < 0x20 || cp == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
          out += buf;
        } else {
          out.append(v.substr(i, n));
        }
    }
    i += n;
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == std::trunc(v) && std::fabs(v) < 9.007199254740992e15)
    return std::to_string(static_cast<long long>(v));
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "null";
}

Json& Json::Raw(std::string_view key, std::string_view json) {
  // Raw JSON may come from SQLite's json functions (a rule's evidence), which pass a name's
  // invalid UTF-8 through inside their strings; replacing it keeps the text valid JSON (outside
  // strings, valid JSON is ASCII, so nothing else can change).
  return Member(key, utf8::MakeValid(json));
}

Json& Json::Member(std::string_view key, std::string_view json) {
  items_.push_back(array_ ? std::string(json) : JsonQuote(key) + ":" + std::string(json));
  return *this;
}

Json Json::LastItems(size_t n) const {
  Json out = *this;
  if (out.items_.size() > n) out.items_.erase(out.items_.begin(), out.items_.end() - n);
  return out;
}

const std::string& Json::str() const {
  out_ = array_ ? "[" : "{";
  for (size_t i = 0; i < items_.size(); ++i) out_ += (i ? "," : "") + items_[i];
  out_ += array_ ? "]" : "}";
  return out_;
}

}  // namespace tw

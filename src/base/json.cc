#include "base/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tw {

std::string JsonQuote(std::string_view v) {
  std::string out = "\"";
  for (unsigned char c : v) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
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

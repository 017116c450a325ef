#include "decode/json_value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace tw::decode {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool ParseNumberToken(std::string_view s, double* out) {
  if (s.empty()) return false;
  if (s == "NaN") return *out = std::numeric_limits<double>::quiet_NaN(), true;
  if (s == "Infinity") return *out = kInf, true;
  if (s == "-Infinity") return *out = -kInf, true;
  const char c = s[0];
  if (!(c == '-' || (c >= '0' && c <= '9'))) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (end != s.data() + s.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    // 1e400 or an integer of 400 digits: strtod says what it rounds to (inf or 0).
    *out = std::strtod(std::string(s).c_str(), nullptr);
    return true;
  }
  return ec == std::errc();
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  size_t position() const { return p_; }

  Status Parse(JsonNode* out) {
    if (!Value(out, 0)) return Error();
    Space();
    if (p_ != s_.size()) {
      error_ = "unexpected text after the value";
      return Error();
    }
    return Status::Ok();
  }

 private:
  Status Error() const {
    return Corrupt("value_json: " + error_ + " at byte " + std::to_string(p_));
  }
  bool Fail(const char* what) {
    if (error_.empty()) error_ = what;
    return false;
  }
  void Space() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\t' || s_[p_] == '\r'))
      ++p_;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  bool Value(JsonNode* out, int depth) {
    if (depth > 64) return Fail("nested too deep");
    Space();
    if (p_ >= s_.size()) return Fail("value expected");
    const char c = s_[p_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') {
      out->type = JsonNode::Type::kString;
      return String(&out->text);
    }
    if (Literal("true")) return out->type = JsonNode::Type::kBool, out->number = 1, true;
    if (Literal("false")) return out->type = JsonNode::Type::kBool, out->number = 0, true;
    if (Literal("null")) return out->type = JsonNode::Type::kNull, true;
    size_t e = p_;
    while (e < s_.size() && std::string_view(",]} \n\t\r").find(s_[e]) == std::string_view::npos) ++e;
    if (!ParseNumberToken(s_.substr(p_, e - p_), &out->number)) return Fail("not a JSON value");
    out->type = JsonNode::Type::kNumber;
    p_ = e;
    return true;
  }

  bool Object(JsonNode* out, int depth) {
    out->type = JsonNode::Type::kObject;
    ++p_;
    Space();
    if (p_ < s_.size() && s_[p_] == '}') return ++p_, true;
    for (;;) {
      Space();
      if (p_ >= s_.size() || s_[p_] != '"') return Fail("object key expected");
      std::string key;
      if (!String(&key)) return false;
      Space();
      if (p_ >= s_.size() || s_[p_] != ':') return Fail("':' expected");
      ++p_;
      out->object.push_back({std::move(key), JsonNode{}});
      if (!Value(&out->object.back().value, depth + 1)) return false;
      Space();
      if (p_ < s_.size() && s_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < s_.size() && s_[p_] == '}') return ++p_, true;
      return Fail("',' or '}' expected");
    }
  }

  bool Array(JsonNode* out, int depth) {
    out->type = JsonNode::Type::kArray;
    ++p_;
    Space();
    if (p_ < s_.size() && s_[p_] == ']') return ++p_, true;
    for (;;) {
      out->array.emplace_back();
      if (!Value(&out->array.back(), depth + 1)) return false;
      Space();
      if (p_ < s_.size() && s_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < s_.size() && s_[p_] == ']') return ++p_, true;
      return Fail("',' or ']' expected");
    }
  }

  static void Utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool Hex4(uint32_t* v) {
    if (p_ + 4 > s_.size()) return Fail("short \\u escape");
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[p_++];
      r <<= 4;
      if (h >= '0' && h <= '9') r |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') r |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') r |= static_cast<uint32_t>(h - 'A' + 10);
      else return Fail("bad \\u escape");
    }
    *v = r;
    return true;
  }

  bool String(std::string* out) {
    ++p_;  // opening quote
    for (;;) {
      const size_t run = s_.find_first_of("\"\\", p_);
      if (run == std::string_view::npos) return Fail("unterminated string");
      out->append(s_.substr(p_, run - p_));
      p_ = run + 1;
      if (s_[run] == '"') return true;
      if (p_ >= s_.size()) return Fail("unterminated string");
      const char e = s_[p_++];
      switch (e) {
        case '"': case '\\': case '/': out->push_back(e); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(p_, 2) == "\\u") {
            p_ += 2;
            uint32_t lo;
            if (!Hex4(&lo)) return false;
            if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          Utf8(cp, out);
          break;
        }
        default: return Fail("bad escape");
      }
    }
  }

  std::string_view s_;
  size_t p_ = 0;
  std::string error_;
};

}  // namespace

bool ParseJsonNumber(std::string_view s, double* out) {
  if (s == "true") return *out = 1, true;
  if (s == "false") return *out = 0, true;
  return ParseNumberToken(s, out);
}

const JsonNode* JsonNode::Find(std::string_view key) const {
  for (const auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

Status ParseJson(std::string_view json, JsonNode* out, size_t* error_at) {
  *out = JsonNode{};
  Parser parser(json);
  Status s = parser.Parse(out);
  if (!s.ok() && error_at) *error_at = parser.position();
  return s;
}

}  // namespace tw::decode

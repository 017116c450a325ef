// A small JSON writer for the objects trainwatch emits (diagnosis evidence, reports, query
// output): strings escaped and always valid UTF-8, numbers in shortest round-trip form, NaN
// and ±Inf as null (JSON has neither). Parsing, where needed, goes through SQLite's json
// functions or Boost.JSON.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tw {

// `v` as a quoted JSON string that is always valid UTF-8, whatever the bytes of `v`: each
// maximal invalid subpart becomes U+FFFD (as Python's errors="replace" does), and control
// characters, DEL, U+2028 and U+2029 are escaped. Every JSON writer quotes through this.
std::string JsonQuote(std::string_view v);
// A number as JSON: integers without a fraction, NaN/Inf as null.
std::string JsonNumber(double v);

// Builds one object or array by appending members in order.
class Json {
 public:
  static Json Array() { Json j; j.array_ = true; return j; }

  Json& Num(std::string_view key, double v) { return Member(key, JsonNumber(v)); }
  Json& Str(std::string_view key, std::string_view v) { return Member(key, JsonQuote(v)); }
  Json& Bool(std::string_view key, bool v) { return Member(key, v ? "true" : "false"); }
  // `json` must be JSON text; invalid UTF-8 in it is replaced (see JsonQuote).
  Json& Raw(std::string_view key, std::string_view json);
  Json& Nested(std::string_view key, const Json& v) { return Member(key, v.str()); }
  // Arrays: appends an element.
  Json& Push(const Json& v) { return Member("", v.str()); }

  // The last n elements of an array (all when fewer).
  Json LastItems(size_t n) const;
  const std::string& str() const;

 private:
  Json& Member(std::string_view key, std::string_view json);
  bool array_ = false;
  std::vector<std::string> items_;  // each "key":value, or value in an array
  mutable std::string out_;
};

}  // namespace tw

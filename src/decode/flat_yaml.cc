#include "decode/flat_yaml.h"

#include <cmath>

#include "base/json.h"
#include "base/strings.h"
#include "decode/json_value.h"

namespace tw::decode {

namespace {

std::string ScalarJson(std::string_view v) {
  if (v == "true" || v == "True" || v == "TRUE") return "true";
  if (v == "false" || v == "False" || v == "FALSE") return "false";
  if (v.empty() || v == "null" || v == "~" || v == "Null" || v == "NULL") return "null";
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) {
    std::string inner(v.substr(1, v.size() - 2));
    if (v.front() == '\'') {  // '' is a quote inside single quotes
      for (size_t at = inner.find("''"); at != std::string::npos; at = inner.find("''", at + 1))
        inner.erase(at, 1);
    }
    return JsonQuote(inner);
  }
  double d = 0;
  if (v != ".nan" && v != ".inf" && ParseJsonNumber(v, &d) && std::isfinite(d)) return JsonNumber(d);
  return JsonQuote(v);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ParseFlatYaml(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty() || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == '-')
      continue;  // nested, a comment, a list item or a document marker
    const size_t colon = line.find(": ");
    const bool bare = colon == std::string_view::npos && TrimSpace(line).ends_with(':');
    if (colon == std::string_view::npos && !bare) continue;
    const std::string_view key = TrimSpace(line.substr(0, bare ? TrimSpace(line).size() - 1 : colon));
    if (key.empty() || key.front() == '\'' || key.front() == '"' || key.front() == '{' ||
        key.front() == '[' || key.front() == '&' || key.front() == '!')
      continue;
    const std::string_view value = bare ? std::string_view() : TrimSpace(line.substr(colon + 2));
    if (!value.empty() && (value.front() == '{' || value.front() == '[' || value.front() == '&' ||
                           value.front() == '*' || value.front() == '!' || value.front() == '|' ||
                           value.front() == '>'))
      continue;  // a flow collection, an anchor, a tag or a block scalar: not read
    if (bare) continue;  // a nested block follows
    out.emplace_back(std::string(key), ScalarJson(value));
  }
  return out;
}

}  // namespace tw::decode

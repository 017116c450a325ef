#include "wandb/legacy_files.h"

#include <cmath>
#include <sstream>

#include "base/file_io.h"
#include "base/json.h"
#include "decode/json_value.h"

namespace tw::wandb {

using decode::JsonNode;
using decode::ParseJson;
using decode::ParseJsonNumber;

namespace {

std::string Trim(std::string s) {
  const size_t a = s.find_first_not_of(" \t\r");
  const size_t b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// A YAML plain or quoted scalar as JSON.
std::string ScalarJson(const std::string& v) {
  if (v == "null" || v == "~") return "null";
  if (v == "true" || v == "false") return v;
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front())
    return JsonQuote(v.substr(1, v.size() - 2));
  double d;
  if (ParseJsonNumber(v, &d) && std::isfinite(d)) return v;
  if (v == ".nan" || v == ".NaN") return "NaN";
  if (v == ".inf" || v == ".Inf") return "Infinity";
  if (v == "-.inf" || v == "-.Inf") return "-Infinity";
  return JsonQuote(v);
}

std::string ToJson(const JsonNode& n) {
  using T = JsonNode::Type;
  switch (n.type) {
    case T::kNull: return "null";
    case T::kBool: return n.number != 0 ? "true" : "false";
    case T::kNumber:
      if (std::isnan(n.number)) return "NaN";
      if (std::isinf(n.number)) return n.number > 0 ? "Infinity" : "-Infinity";
      return JsonNumber(n.number);
    case T::kString: return JsonQuote(n.text);
    case T::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < n.array.size(); ++i) out += (i ? ", " : "") + ToJson(n.array[i]);
      return out + "]";
    }
    case T::kObject: {
      std::string out = "{";
      for (size_t i = 0; i < n.object.size(); ++i)
        out += (i ? ", " : "") + JsonQuote(n.object[i].key) + ": " + ToJson(n.object[i].value);
      return out + "}";
    }
  }
  return "null";
}

// The whole file, "" if it is not there, not a regular file (a FIFO would block an
// ifstream forever) or larger than a side file ever is.
std::string Slurp(const std::string& path) {
  constexpr uint64_t kMaxSideFile = 64 << 20;
  Result<InputFile> f = InputFile::Open(path);
  if (!f.ok() || static_cast<uint64_t>(f->stat().st_size) > kMaxSideFile) return {};
  std::string text(static_cast<size_t>(f->stat().st_size), '\0');
  Result<size_t> n = ReadAt(f->fd(), path, text.data(), text.size(), 0);
  text.resize(n.ok() ? *n : 0);
  return text;
}

}  // namespace

KeyValues ParseConfigYaml(const std::string& text) {
  KeyValues out;
  std::istringstream in(text);
  std::string line, key;
  int child_indent = -1;  // the indentation of the current key's children
  while (std::getline(in, line)) {
    const size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || line[indent] == '#') continue;
    const std::string body = Trim(line.substr(indent));
    if (indent == 0) {
      key.clear();
      child_indent = -1;
      const size_t colon = body.find(':');
      if (colon == std::string::npos || !Trim(body.substr(colon + 1)).empty()) continue;  // wandb_version: 1
      key = body.substr(0, colon);
      if (key == "_wandb") key.clear();
      continue;
    }
    if (key.empty()) continue;
    if (child_indent < 0) child_indent = static_cast<int>(indent);
    if (static_cast<int>(indent) != child_indent || !body.starts_with("value:")) continue;
    const std::string v = Trim(body.substr(6));
    if (!v.empty()) out.emplace_back(key, ScalarJson(v));
  }
  return out;
}

Result<KeyValues> ParseSummaryJson(const std::string& text) {
  JsonNode root;
  TW_RETURN_IF_ERROR(ParseJson(text, &root));
  if (root.type != JsonNode::Type::kObject) return Corrupt("the summary is not a JSON object");
  KeyValues out;
  for (const auto& m : root.object) out.emplace_back(m.key, ToJson(m.value));
  return out;
}

LegacyFiles ReadLegacyFiles(const std::string& run_dir) {
  LegacyFiles f;
  for (const char* sub : {"/", "/files/"}) {
    if (f.config_yaml.empty()) f.config_yaml = Slurp(run_dir + sub + "config.yaml");
    if (f.summary_json.empty()) f.summary_json = Slurp(run_dir + sub + "wandb-summary.json");
  }
  return f;
}

}  // namespace tw::wandb

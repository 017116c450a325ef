// JSON as Python's json module writes it: bare NaN, Infinity and -Infinity occur (W&B's
// value_json, HF's trainer_state.json, MLflow; Boost.JSON and most parsers refuse those,
// here they are kept). Numbers and booleans take a fast path; objects and arrays are parsed
// into a small tree.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tw::decode {

// A bare number (NaN, Infinity and -Infinity included; integers beyond 2^53 rounded) or a
// boolean (1 or 0). False for anything else: strings, null, arrays, objects.
bool ParseJsonNumber(std::string_view json, double* out);

struct JsonMember;

struct JsonNode {
  enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  double number = 0;  // kNumber, kBool (1 or 0)
  std::string text;   // kString, unescaped
  std::vector<JsonNode> array;
  // In document order. (A struct, not std::pair<std::string, JsonNode>: with JsonNode still
  // incomplete, std::pair's constructor constraints do not compile with clang and
  // libstdc++, which left tw_core, and so the fuzz targets, unbuildable with clang.)
  std::vector<JsonMember> object;

  const JsonNode* Find(std::string_view key) const;  // an object's member, or nullptr
};

struct JsonMember {
  std::string key;
  JsonNode value;
};

// Parses one JSON document, NaN/Infinity allowed, nested at most 64 deep. The error says
// what was wrong and at which byte (also in *error_at, when given).
Status ParseJson(std::string_view json, JsonNode* out, size_t* error_at = nullptr);

}  // namespace tw::decode

// W&B's value_json: what wandb.log() values become. Python's json module writes them, so
// bare NaN, Infinity and -Infinity occur (Boost.JSON and most parsers refuse those, and W&B's
// own charts hide them: here they are kept). Numbers and booleans take a fast path; objects
// (nested dicts, histograms, media) are parsed into a small tree.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "decode/classify.h"

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

// What a logged value is, once parsed.
enum class WandbValueKind : uint8_t {
  kNumber,     // a scalar (booleans too)
  kHistogram,  // {"_type": "histogram", "values": [...], "bins": [...]} or "packedBins"
  kMedia,      // any other {"_type": ...}: images, tables, videos, ... (counted, not stored)
  kImage,      // image-file, images/separated
  kString,
  kNull,
  kOther,      // arrays and anything else not charted
};

// A histogram object's counts and edges. Its `values` are counts per bin: bins has one more
// entry than values (W&B's np.histogram layout), or packedBins {min, size, count}.
Status WandbHistogram(const JsonNode& object, Histogram* out);

// Classifies a parsed value; objects without `_type` are not classified here (the caller
// flattens them into dotted names).
WandbValueKind ClassifyWandbValue(const JsonNode& node);

}  // namespace tw::decode

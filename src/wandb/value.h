// W&B's value_json: what wandb.log() values become once parsed (decode/json_value.h): numbers,
// histograms, media and the rest.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "decode/classify.h"
#include "decode/json_value.h"

namespace tw::wandb {

using decode::JsonNode;

// What a logged value is, once parsed.
enum class ValueKind : uint8_t {
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
Status ParseHistogram(const JsonNode& object, decode::Histogram* out);

// Classifies a parsed value; objects without `_type` are not classified here (the caller
// flattens them into dotted names).
ValueKind ClassifyValue(const JsonNode& node);

}  // namespace tw::wandb

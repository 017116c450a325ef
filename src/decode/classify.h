// Turns one decoded Summary.Value into what trainwatch stores: a scalar, a histogram, a
// text, hparams, or a blob that is only counted. Pure functions; the per-run memory of
// each tag's plugin (metadata comes only with a tag's first value in a file) is the
// caller's, passed in as `remembered`.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/model.h"
#include "base/status.h"
#include "decode/event.h"

namespace tw::decode {

enum class Kind : uint8_t {
  kScalar, kHistogram, kText, kHParamsStart, kHParamsOther, kImage, kAudio, kOtherTensor,
};
const char* KindName(Kind kind);

// What TensorBoard would call a tag's plugin: from the value's own metadata, else from
// an earlier value of the same tag in the same run.
struct TagPlugin {
  std::string plugin_name;
  int32_t data_class = 0;
};

using Histogram = model::Histogram;
using HParam = model::HParam;

struct Classified {
  Kind kind = Kind::kOtherTensor;
  double scalar = 0;
  Histogram histogram;
  std::string text;
  std::vector<HParam> hparams;
};

// Classifies `v`. `remembered` is the plugin last seen for this tag in this run (nullptr if
// none). A Corrupt status means the value claimed a kind but its bytes did not match it
// (e.g. a scalar tensor with 3 content bytes); the caller reports it and moves on.
Status Classify(const SummaryValue& v, const std::vector<std::string_view>& strings,
                const TagPlugin* remembered, Classified* out);

// Float decoding helpers, exposed for tests.
float HalfToFloat(uint16_t h);
float Bfloat16ToFloat(uint16_t b);

}  // namespace tw::decode

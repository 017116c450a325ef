// What trainwatch keeps besides scalars, as plain values: the shapes that decoders produce and
// the store writes. Here, below both, so that the store needs no decoder's header (the build
// forbids store -> decode: see cmake/layers.cmake).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tw::model {

struct Histogram {
  double count = 0, sum = 0, min = 0, max = 0;
  std::vector<std::array<double, 3>> buckets;  // (left edge, right edge, count)
};

// One hyperparameter of a run (TensorBoard's hparams plugin, a W&B config key).
struct HParam {
  std::string key;
  enum class Type : uint8_t { kNumber, kString, kBool, kNull } type = Type::kNull;
  double number = 0;
  std::string text;
};

}  // namespace tw::model

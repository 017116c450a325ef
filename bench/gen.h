// Synthetic but realistic training logs for the benchmarks: the tag names, logging cadence and
// value shapes of a typical PyTorch (or TF2 Keras) training loop, deterministic from a seed.
// Events are built with the test writer (support/event_writer.h), so the bytes are exactly
// what libprotobuf serializes for a real writer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "support/event_writer.h"

namespace tw::bench {

struct TagSpec {
  const char* name;
  int every;  // logged every `every` steps (validation less often than training)
};

// Twenty tags a real run logs; a run uses the first n of them.
inline const std::vector<TagSpec>& AllTags() {
  static const std::vector<TagSpec> tags = {
      {"train/loss", 1},           {"train/lr", 1},
      {"train/grad_norm", 1},      {"train/accuracy", 1},
      {"train/tokens_per_sec", 1}, {"train/step_time", 1},
      {"gpu/0/memory_allocated_gb", 1}, {"gpu/0/utilization", 1},
      {"val/loss", 50},            {"val/accuracy", 50},
      {"train/loss_scale", 1},     {"optim/update_ratio", 1},
      {"gpu/1/memory_allocated_gb", 1}, {"gpu/1/utilization", 1},
      {"data/queue_depth", 1},     {"system/cpu_percent", 1},
      {"val/perplexity", 50},      {"optim/momentum", 1},
      {"system/ram_gb", 1},        {"train/weight_decay", 1},
  };
  return tags;
}

inline uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A value shaped like the tag's real curve, with noise; never NaN.
inline float ValueFor(int tag, int64_t step, uint64_t seed) {
  const double noise =
      static_cast<double>(Mix(seed * 1000003u + static_cast<uint64_t>(tag) * 7919u +
                              static_cast<uint64_t>(step)) >> 11) * 0x1p-53 - 0.5;  // [-0.5, 0.5)
  const double s = static_cast<double>(step);
  switch (tag) {
    case 0: case 8: return static_cast<float>(2.5 * std::exp(-s / 20000.0) + 0.3 + 0.05 * noise);
    case 1: return static_cast<float>(3e-4 * std::min(1.0, s / 2000.0) * std::cos(s / 4e5));
    case 3: case 9: return static_cast<float>(0.95 - 0.8 * std::exp(-s / 15000.0) + 0.01 * noise);
    case 10: return 65536.0f;  // integral, as loss scales are
    case 16: return static_cast<float>(std::exp(2.5 * std::exp(-s / 20000.0) + 0.3));
    case 17: return 0.9f;
    case 19: return 0.01f;
    default: return static_cast<float>(50.0 + 10.0 * noise + std::fmod(s, 97.0) * 0.01);
  }
}

inline double WallFor(int64_t step, int tag) {
  return 1.7e9 + static_cast<double>(step) * 0.25 + tag * 1e-4;
}

// Appends the events of one training step (one event per value, as PyTorch's add_scalar and
// TF2's tf.summary.scalar write them) to `out` via `add(event)`. `first_seen` tracks, per tag,
// whether the current file already carried its metadata (TF2 writes it with a tag's first value
// in each file).
template <typename Add>
void AddStep(int64_t step, int ntags, bool tf2, uint64_t seed, std::vector<bool>* first_seen,
             Add&& add) {
  const auto& tags = AllTags();
  for (int t = 0; t < ntags; ++t) {
    if (step % tags[static_cast<size_t>(t)].every != 0) continue;
    const std::string tag = tags[static_cast<size_t>(t)].name;
    const float v = ValueFor(t, step, seed);
    const double wall = WallFor(step, t);
    if (tf2) {
      const bool meta = !(*first_seen)[static_cast<size_t>(t)];
      (*first_seen)[static_cast<size_t>(t)] = true;
      add(testing::Tf2ScalarEvent(tag, step, wall, v, meta));
    } else {
      add(testing::SimpleScalarEvent(tag, step, wall, v));
    }
  }
}

}  // namespace tw::bench

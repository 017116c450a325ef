// M4 downsampling (docs/web.md): the points of a step range split into `width` equal buckets of
// steps, each keeping its first, last, lowest and highest point, so a one-step spike (or a NaN)
// survives at any width. At most 4 * width points come out, in the order they went in.
// Not thread-safe: one per request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tw::web {

struct Point {
  int64_t step = 0;
  double wall = 0;
  double value = 0;     // meaningful when value_class is 0 (finite) or 2/3 (+/-Inf)
  int value_class = 0;  // the store's: 0 finite, 1 NaN, 2 +Inf, 3 -Inf
  bool superseded = false;
};

class M4 {
 public:
  // Steps lo..hi (inclusive, lo <= hi) in `width` >= 1 buckets.
  M4(int64_t lo, int64_t hi, int64_t width);
  // Points must come in nondecreasing step order.
  void Add(const Point& p);
  std::vector<Point> Finish();

 private:
  void Flush();
  int64_t Bucket(int64_t step) const;

  int64_t lo_, width_;
  double span_;
  int64_t bucket_ = -1;
  // Indices into pending_ of the bucket's first, last, lowest and highest point.
  std::vector<Point> pending_;
  size_t first_ = 0, last_ = 0, low_ = 0, high_ = 0;
  bool has_low_ = false;
  std::vector<Point> out_;
};

}  // namespace tw::web

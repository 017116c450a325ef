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
  // Points must come in nondecreasing step order. No allocation per point: a 2-million-point
  // series goes through in one pass.
  void Add(const Point& p);
  std::vector<Point> Finish();

 private:
  struct Candidate {
    Point p;
    int64_t seq = 0;  // arrival order, to emit a bucket's candidates as they came
  };
  void Flush();
  int64_t Bucket(int64_t step) const;

  int64_t lo_, width_;
  double span_;
  int64_t bucket_ = -1;
  int64_t seq_ = 0;
  bool open_ = false;     // the current bucket holds a point
  bool has_low_ = false;  // ... and a number (a NaN is no lowest)
  Candidate first_, last_, low_, high_;
  std::vector<Point> out_;
};

}  // namespace tw::web

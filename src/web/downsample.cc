#include "web/downsample.h"

#include <algorithm>
#include <limits>

namespace tw::web {
namespace {

// For the highest point a NaN outranks everything, +Inf included: a NaN is what a reader of a
// loss curve most needs to see, so a bucket holding one shows it.
double HighKey(const Point& p) {
  if (p.value_class == 1) return std::numeric_limits<double>::infinity();
  return p.value;
}
bool Higher(const Point& a, const Point& b) {
  if (a.value_class == 1) return b.value_class != 1;
  if (b.value_class == 1) return false;
  return HighKey(a) > HighKey(b);
}

}  // namespace

M4::M4(int64_t lo, int64_t hi, int64_t width)
    : lo_(lo), width_(std::max<int64_t>(width, 1)), span_(static_cast<double>(hi - lo) + 1) {}

int64_t M4::Bucket(int64_t step) const {
  const double b = static_cast<double>(step - lo_) / span_ * static_cast<double>(width_);
  return std::clamp<int64_t>(static_cast<int64_t>(b), 0, width_ - 1);
}

void M4::Add(const Point& p) {
  const int64_t b = Bucket(p.step);
  if (b != bucket_) {
    Flush();
    bucket_ = b;
  }
  const Candidate c{p, seq_++};
  if (!open_) {
    open_ = true;
    first_ = last_ = high_ = c;
    has_low_ = p.value_class != 1;
    if (has_low_) low_ = c;
    return;
  }
  last_ = c;
  if (Higher(p, high_.p)) high_ = c;
  if (p.value_class != 1 && (!has_low_ || p.value < low_.p.value)) {
    low_ = c;
    has_low_ = true;
  }
}

void M4::Flush() {
  if (!open_) return;
  Candidate kept[4] = {first_, last_, high_, low_};
  const size_t n = has_low_ ? 4 : 3;
  std::sort(kept, kept + n, [](const Candidate& a, const Candidate& b) { return a.seq < b.seq; });
  for (size_t i = 0; i < n; ++i)
    if (i == 0 || kept[i].seq != kept[i - 1].seq) out_.push_back(kept[i].p);
  open_ = false;
}

std::vector<Point> M4::Finish() {
  Flush();
  return std::move(out_);
}

}  // namespace tw::web

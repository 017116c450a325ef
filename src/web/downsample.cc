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
  // Only the four candidates are kept, not the bucket: pending_ holds at most 5 points.
  const size_t i = pending_.size();
  pending_.push_back(p);
  if (i == 0) {
    first_ = last_ = high_ = 0;
    has_low_ = p.value_class != 1;
    low_ = 0;
    return;
  }
  last_ = i;
  if (Higher(p, pending_[high_])) high_ = i;
  if (p.value_class != 1 && (!has_low_ || p.value < pending_[low_].value)) {
    low_ = i;
    has_low_ = true;
  }
  // Drop what no longer matters, keeping the candidates' order.
  std::vector<size_t> keep = {first_, last_, high_};
  if (has_low_) keep.push_back(low_);
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  if (keep.size() == pending_.size()) return;
  std::vector<Point> kept;
  auto moved = [&](size_t old) { return static_cast<size_t>(std::find(keep.begin(), keep.end(), old) - keep.begin()); };
  for (size_t k : keep) kept.push_back(pending_[k]);
  first_ = moved(first_);
  last_ = moved(last_);
  high_ = moved(high_);
  if (has_low_) low_ = moved(low_);
  pending_ = std::move(kept);
}

void M4::Flush() {
  out_.insert(out_.end(), pending_.begin(), pending_.end());
  pending_.clear();
}

std::vector<Point> M4::Finish() {
  Flush();
  return std::move(out_);
}

}  // namespace tw::web

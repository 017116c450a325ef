#include "diagnose/rule_limits.h"

#include <malloc.h>

#include <algorithm>
#include <cstdio>

namespace tw::diagnose {

namespace {

// VM instructions between two calls of the handler: a few microseconds of work, so a deadline
// is met within a millisecond, and the clock read costs nothing in comparison.
constexpr int kProgressOps = 1000;
// How often the heap is measured (mallinfo2 walks malloc's free lists: not per call).
constexpr auto kHeapCheckEvery = std::chrono::milliseconds(10);

std::string Mib(int64_t bytes, const char* format = "%.0f MiB") {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, static_cast<double>(bytes) / (1 << 20));
  return buf;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

}  // namespace

int64_t MaxValueBytes(const RuleLimitOptions& o) {
  return std::clamp<int64_t>(o.memory_bytes / 4, 1 << 20, 1'000'000'000);
}

RuleLimits::RuleLimits(sqlite3* db, RuleLimitOptions options, const std::atomic<bool>* cancel)
    : db_(db), options_(options), cancel_(cancel) {
  sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, static_cast<int>(MaxValueBytes(options_)));
  sqlite3_progress_handler(db_, kProgressOps, &RuleLimits::OnProgress, this);
}

RuleLimits::~RuleLimits() { sqlite3_progress_handler(db_, 0, nullptr, nullptr); }

void RuleLimits::Begin() {
  hit_ = Hit::kNone;
  heap_grown_ = 0;
  start_ = std::chrono::steady_clock::now();
  deadline_ = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(options_.seconds));
  next_heap_check_ = start_ + kHeapCheckEvery;
  heap_start_ = HeapInUse();
  active_ = true;
}

void RuleLimits::End() { active_ = false; }

int64_t RuleLimits::HeapInUse() {
  const struct mallinfo2 m = ::mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
}

int RuleLimits::OnProgress(void* p) {
  auto* self = static_cast<RuleLimits*>(p);
  // Only the rule's statement: the engine's own (the ROLLBACK after a cancel among them) are
  // short, and sqlite3_interrupt reaches them.
  if (!self->active_) return 0;
  if (self->cancel_->load(std::memory_order_relaxed)) return 1;
  const auto now = std::chrono::steady_clock::now();
  if (now >= self->deadline_) {
    self->hit_ = Hit::kTime;
    self->stopped_ = now;
    return 1;
  }
  if (now >= self->next_heap_check_) {
    self->next_heap_check_ = now + kHeapCheckEvery;
    self->heap_grown_ = std::max(self->heap_grown_, HeapInUse() - self->heap_start_);
    if (self->heap_grown_ > self->options_.memory_bytes) {
      self->hit_ = Hit::kMemory;
      self->stopped_ = now;
      return 1;
    }
  }
  return 0;
}

RuleLimits::Hit RuleLimits::HitBy(int rc) const {
  if ((rc & 0xff) == SQLITE_TOOBIG) return Hit::kMemory;
  return (rc & 0xff) == SQLITE_INTERRUPT ? hit_ : Hit::kNone;
}

std::string RuleLimits::Describe(Hit hit, int rc) const {
  if (hit == Hit::kTime)
    return "its time limit of " + Seconds(options_.seconds) + " (stopped after " +
           Seconds(std::chrono::duration<double>(stopped_ - start_).count()) + ")";
  if ((rc & 0xff) == SQLITE_TOOBIG)
    return "its memory limit: it made a value larger than " + Mib(MaxValueBytes(options_)) +
           " (a quarter of the " + Mib(options_.memory_bytes) + " limit; sqlite: string or blob too big)";
  return "its memory limit of " + Mib(options_.memory_bytes) + " (the heap grew by " + Mib(heap_grown_, "%.1f MiB") +
         " in " + Seconds(std::chrono::duration<double>(stopped_ - start_).count()) + ")";
}

}  // namespace tw::diagnose

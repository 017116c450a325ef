// What one rule may spend: a time budget and a memory cap per evaluation of the rule (on one run,
// or once for a scope-all rule), enforced on the engine's read-only connection only. The writer
// and the findings connection are not touched: a limit interrupts the rule's statement, never
// another thread's work.
//
// - Time: a SQLite progress handler checks a deadline every kProgressOps VM instructions and
//   interrupts the statement past it. (A single C++ aggregate's finaliser runs between two
//   instructions; its cost is bounded by the rows it was fed within the deadline.)
// - Memory: SQLITE_LIMIT_LENGTH bounds any one value the rule makes (randomblob, group_concat,
//   json_group_array, ...), refused before it is allocated; and the progress handler measures
//   the process heap in use (malloc's arenas plus mmapped blocks), interrupting a rule that grew
//   it by more than the cap since it began. The heap is the process's: it is the only measure
//   that also sees the C++ aggregates' buffers and the rows a rule returns. Other threads'
//   transient buffers add to it; the default cap leaves room for them (the ingest turn's at most
//   64 MiB), and a false alarm costs that rule one evaluation, never the writer anything.
//   sqlite3_hard_heap_limit64 is process-wide and would fail the writer's allocations: unused.
// - Cancel: the handler also stops the statement when Engine::Cancel was called, closing the
//   window where sqlite3_interrupt lands between two statements and is forgotten.
//
// Thread: the engine's owner thread (Begin, End, hit) and SQLite's progress callback, which runs
// on that same thread inside sqlite3_step. `cancel` is written by any thread.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace tw::diagnose {

struct RuleLimitOptions {
  double seconds = 10;                 // per evaluation of one rule
  int64_t memory_bytes = 512ll << 20;  // heap growth per evaluation of one rule
  bool operator==(const RuleLimitOptions&) const = default;
};

// The largest single value (string or blob) a rule may make: a quarter of the memory cap.
int64_t MaxValueBytes(const RuleLimitOptions& o);

class RuleLimits {
 public:
  enum class Hit { kNone, kTime, kMemory };

  // Installs the progress handler and the value-length limit on `db`; removes the handler when
  // destroyed. `db` and `cancel` must outlive this object.
  RuleLimits(sqlite3* db, RuleLimitOptions options, const std::atomic<bool>* cancel);
  ~RuleLimits();
  RuleLimits(const RuleLimits&) = delete;
  RuleLimits& operator=(const RuleLimits&) = delete;

  // A rule's statement is about to run / has finished. Outside Begin..End nothing is limited
  // (the engine's own statements: Engine::Cancel's sqlite3_interrupt reaches those).
  void Begin();
  void End();

  // Why the last rule's statement failed, if a limit stopped it. `rc`: the statement's SQLite
  // error code (SQLITE_TOOBIG is the value-length limit).
  Hit HitBy(int rc) const;
  // For a message: "its time limit of 0.5 s (stopped after 0.50 s)", "its memory limit of
  // 64 MiB (the heap grew by 70 MiB)", or the value-length form.
  std::string Describe(Hit hit, int rc) const;

 private:
  static int OnProgress(void* self);
  static int64_t HeapInUse();

  sqlite3* db_;
  RuleLimitOptions options_;
  const std::atomic<bool>* cancel_;
  bool active_ = false;
  Hit hit_ = Hit::kNone;
  std::chrono::steady_clock::time_point start_, deadline_, next_heap_check_, stopped_;
  int64_t heap_start_ = 0, heap_grown_ = 0;
};

}  // namespace tw::diagnose

// The writer thread: owns the only read-write store connection and every RunState. It takes
// paths from the WorkQueue (live lane first), maps each to its root and run, and reads the file
// from its committed offset, a bounded amount per turn (round-robin across files). Everything
// here runs on the writer thread except the methods marked thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "app/config.h"
#include "app/object_roots.h"
#include "app/work_queue.h"
#include "ingest/file_ingester.h"
#include "store/store.h"

namespace tw::app {

class IngestWorker {
 public:
  IngestWorker(std::unique_ptr<store::Store> store, WorkQueue& queue,
               ingest::IngestOptions options);
  ~IngestWorker();

  // Runs until the queue is closed or a stop is requested, then commits daemon state.
  void Run();

  // Paths of the store's active sources. Only before Run() (it uses the store).
  std::vector<std::string> ActiveSourcePaths();
  // Thread-safe: the roots that map a path to a run (set on start and on reload).
  void SetRoots(std::vector<std::string> roots);
  // Thread-safe: the [[console]] globs (a file one matches is a console log, read under the
  // glob's root) and the console profiles (null: the built-ins); set on start and on reload,
  // taken by the writer at its next turn.
  void SetConsole(std::vector<ConsoleGlob> globs, std::shared_ptr<const decode::ProfileSet> profiles);
  // Thread-safe: state for `trainwatch status`, written by the writer at its next turn.
  void SetState(const std::string& key, const std::string& value);
  // Thread-safe: re-posts files whose last read failed (the store was full, say).
  void RetryFailed();
  // Thread-safe: asks Run() to stop at the next commit point.
  void RequestStop() { stop_ = true; }
  // Called once, on the writer thread, when the store can no longer be written at all (it is
  // corrupt, or read-only): retrying every file at every rescan would only fill the log.
  // Run() returns after it. Set before Run().
  void SetOnFatal(std::function<void(const Status&)> f) { on_fatal_ = std::move(f); }
  // Called on the writer thread after each commit that changed what the store holds for run
  // `run` (points, damage, a restart, a file gone), with whether the file came from the live
  // lane, so that diagnosis examines exactly the runs that changed, live ones first, without
  // polling the store for them. Set before Run().
  void SetOnCommitted(std::function<void(int64_t run, bool live)> f) { on_committed_ = std::move(f); }
  // Called on the writer thread after a file of the live lane committed a non-finite value
  // (after on_committed for the same commit): a NaN must not wait for the history's
  // diagnosis. Set before Run().
  void SetOnLiveNonFinite(std::function<void(int64_t run)> f) { on_live_non_finite_ = std::move(f); }

  // Where s3:// paths are looked up (what the last listing said of each object) and read
  // from. Set before Run(); null: no object-store roots.
  void SetObjectRoots(ObjectRoots* objects) { objects_ = objects; }

  // Thread-safe counters, for STATUS= and logs.
  struct Counters {
    std::atomic<int64_t> files_read{0}, points{0}, errors{0}, bytes{0};
    std::atomic<int64_t> heartbeat_ms{0};  // steady clock of the last loop turn or commit
    std::atomic<bool> idle{false};         // waiting on an empty queue: alive, not stuck
    std::atomic<int64_t> store_failures{0};
  };
  const Counters& counters() const { return counters_; }

 private:
  // Where a path is read: its root ("" when none holds it any more: its root or glob was
  // removed from the config) and its run directory. A file a console glob matches is under
  // that glob's root (the first such glob); any other under the longest root holding it.
  struct Place {
    std::string root, dir;
    std::string key() const { return root + '\n' + dir; }  // of runs_: a run per (root, dir)
  };
  Place Locate(const std::string& path);
  // Takes the console globs and profiles SetConsole left, if any: a new FileIngester reads
  // with them (every turn ended committed, so it resumes each file from the store alone).
  void TakeConsoleSettings();
  Status Process(const WorkQueue::Item& item, const Place& place, bool* more);
  // Reads the object at an s3:// path, the version the last listing saw.
  Status ProcessObject(ingest::RunState& run, const std::string& path,
                       const ObjectRoots::Entry& entry, ingest::Totals* totals, bool* more);
  ObjectRoots* objects_ = nullptr;
  std::unique_ptr<objstore::S3Client> s3_;  // the writer's own (its reads)
  std::function<void(int64_t run, bool live)> on_committed_;
  std::function<void(int64_t run)> on_live_non_finite_;
  // Store failures are logged once per condition: when one starts, when it changes, and
  // when writes work again; not once per file per rescan while a disk stays full.
  void StoreFailed(const Status& st, const std::string& doing);
  void StoreWorked();
  Status MarkGone(const std::string& path);
  void FlushState();
  void Beat();

  std::unique_ptr<store::Store> store_;
  WorkQueue& queue_;
  ingest::IngestOptions options_;
  std::unique_ptr<ingest::FileIngester> ingester_;
  std::vector<ConsoleGlob> console_;  // the globs options_.console_globs came from
  // Per run (root and run directory: Place::key), its RunState: a cache of what the store holds (RunState::Load rebuilds
  // one, as after a restart), kept for the kMaxRunStates runs used most recently so memory does
  // not grow with the number of runs watched.
  struct CachedRun {
    std::unique_ptr<ingest::RunState> state;
    uint64_t last_used = 0;
  };
  static constexpr size_t kMaxRunStates = 256;
  ingest::RunState* RunFor(const std::string& dir, const std::string& root, const std::string& path,
                           Status* error);
  std::unordered_map<std::string, CachedRun> runs_;
  uint64_t uses_ = 0;
  bool worked_since_trim_ = false;
  // Per run directory, the file whose turn ended with bytes unread. Later files of that run
  // wait for it: a run's files are read in name order, or a resumed writer's SessionLog START
  // could be seen before the points it supersedes.
  std::unordered_map<std::string, std::string> backlog_;
  // Whether `st` means the store cannot be written any more; if so, says so (once) and stops.
  bool Fatal(const Status& st);
  std::function<void(const Status&)> on_fatal_;
  std::atomic<bool> stop_{false};
  Counters counters_;
  std::string store_condition_;  // the store failure in force ("" when writes work)

  std::mutex mu_;  // guards the members below, shared with other threads
  std::vector<std::string> roots_;
  struct ConsoleSettings {
    std::vector<ConsoleGlob> globs;
    std::shared_ptr<const decode::ProfileSet> profiles;
  };
  std::optional<ConsoleSettings> pending_console_;
  std::map<std::string, std::string> pending_state_;
  std::vector<WorkQueue::Item> failed_;
};

}  // namespace tw::app

#include "app/ingest_worker.h"

#include <fnmatch.h>
#include <malloc.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/log.h"
#include "objstore/object_source.h"
#include "base/source_names.h"
#include "ingest/runs.h"

namespace tw::app {

namespace fs = std::filesystem;

namespace {
ingest::IngestOptions WithStop(ingest::IngestOptions o, const std::atomic<bool>* stop) {
  o.stop = stop;
  return o;
}
}  // namespace

IngestWorker::IngestWorker(std::unique_ptr<store::Store> store, WorkQueue& queue,
                           ingest::IngestOptions options)
    : store_(std::move(store)), queue_(queue), options_(WithStop(options, &stop_)),
      ingester_(std::make_unique<ingest::FileIngester>(*store_, options_)) {}

IngestWorker::~IngestWorker() = default;

std::vector<std::string> IngestWorker::ActiveSourcePaths() {
  Result<std::vector<std::string>> paths = store_->ActiveSourcePaths();
  if (!paths.ok()) {
    log::Warning("store: cannot list known files: " + paths.status().message());
    return {};
  }
  return std::move(*paths);
}

void IngestWorker::SetRoots(std::vector<std::string> roots) {
  std::lock_guard lock(mu_);
  roots_ = std::move(roots);
}

void IngestWorker::SetConsole(std::vector<ConsoleGlob> globs,
                              std::shared_ptr<const decode::ProfileSet> profiles) {
  std::lock_guard lock(mu_);
  pending_console_ = ConsoleSettings{std::move(globs), std::move(profiles)};
}

void IngestWorker::TakeConsoleSettings() {
  std::optional<ConsoleSettings> next;
  {
    std::lock_guard lock(mu_);
    next.swap(pending_console_);
  }
  if (!next) return;
  std::vector<std::string> patterns;
  for (const auto& g : next->globs) patterns.push_back(g.glob);
  // A glob's root may have changed, and with it the run a file belongs to.
  if (next->globs != console_) runs_.clear();
  console_ = std::move(next->globs);
  if (patterns == options_.console_globs && next->profiles == options_.profiles) return;
  options_.console_globs = std::move(patterns);
  options_.profiles = std::move(next->profiles);
  ingester_ = std::make_unique<ingest::FileIngester>(*store_, options_);
}

IngestWorker::Place IngestWorker::Locate(const std::string& path) {
  const sources::SourceKind kind = ingest::KindOf(path, options_);
  Place place{"", sources::RunDirOf(path, kind)};
  if (kind == sources::SourceKind::kConsole)
    for (const auto& g : console_)
      if (g.glob == path || ::fnmatch(g.glob.c_str(), path.c_str(), FNM_PATHNAME) == 0) {
        place.root = g.root;
        return place;
      }
  std::lock_guard lock(mu_);
  for (const auto& r : roots_)
    if ((path.starts_with(r + "/") || path == r) && r.size() > place.root.size()) place.root = r;
  return place;
}

void IngestWorker::SetState(const std::string& key, const std::string& value) {
  std::lock_guard lock(mu_);
  pending_state_[key] = value;
}

void IngestWorker::RetryFailed() {
  std::vector<WorkQueue::Item> failed;
  {
    std::lock_guard lock(mu_);
    failed.swap(failed_);
  }
  for (const auto& f : failed) queue_.Post(f.path, f.lane);
}

void IngestWorker::Beat() {
  counters_.heartbeat_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now().time_since_epoch())
                               .count();
}

namespace {
// What a store failure is, for telling one condition from the next: its code and the OS's or
// SQLite's reason ("database or disk is full"), without the statement or file it hit.
std::string Condition(const Status& st) {
  const std::string& m = st.message();
  const size_t colon = m.rfind(": ");
  return std::string(CodeName(st.code())) + ": " +
         (colon == std::string::npos ? m : m.substr(colon + 2));
}
}  // namespace

void IngestWorker::StoreFailed(const Status& st, const std::string& doing) {
  counters_.store_failures++;
  const std::string condition = Condition(st);
  if (condition == store_condition_) return;  // said already
  log::Error("store: " + st.message() + " (" + doing +
             "); files are retried at every rescan until writes work again");
  store_condition_ = condition;
}

void IngestWorker::StoreWorked() {
  if (store_condition_.empty()) return;
  log::Notice("store: writes work again; files that could not be stored are being read");
  store_condition_.clear();
}

void IngestWorker::FlushState() {
  std::map<std::string, std::string> state;
  {
    std::lock_guard lock(mu_);
    state.swap(pending_state_);
  }
  if (state.empty()) return;
  Status st = store_->Begin();
  for (const auto& [k, v] : state)
    if (st.ok()) st = store_->SetDaemonState(k, v);
  if (st.ok()) st = store_->Commit();
  if (!st.ok()) {
    store_->Rollback();
    if (Fatal(st)) return;
    StoreFailed(st, "while recording the daemon's state");
    std::lock_guard lock(mu_);
    for (auto& [k, v] : state) pending_state_.try_emplace(k, v);  // newer values win
    return;
  }
  StoreWorked();
}

bool IngestWorker::Fatal(const Status& st) {
  if (st.code() != Code::kCorrupt && st.code() != Code::kReadOnly) return false;
  if (!stop_.exchange(true) && on_fatal_) on_fatal_(st);
  return true;
}

void IngestWorker::Run() {
  Beat();
  while (!stop_) {
    FlushState();
    // Wake at least once a second so the heartbeat (and with it the watchdog) shows life.
    counters_.idle = true;
    std::optional<WorkQueue::Item> item = queue_.Take(std::chrono::seconds(1));
    counters_.idle = false;
    Beat();
    TakeConsoleSettings();
    if (!item) {
      if (queue_.closed()) break;
      // Idle after a burst of work (a backfill): hand the allocator's free pages back, or RSS
      // keeps the burst's high-water mark for the daemon's whole life.
      if (worked_since_trim_) {
        ::malloc_trim(0);
        worked_since_trim_ = false;
      }
      continue;
    }
    worked_since_trim_ = true;
    // Done when this turn ends, however it ends: after a re-post of the path, so the queue is
    // never drained in between.
    const std::unique_ptr<WorkQueue, void (*)(WorkQueue*)> in_hand(&queue_, [](WorkQueue* q) { q->Done(); });
    const std::string& path = item->path;
    const Place place = Locate(path);
    const std::string& dir = place.dir;
    if (auto b = backlog_.find(dir); b != backlog_.end() && b->second != path) {
      if (path > b->second) {
        // After the run's earlier file is done; that file takes this one's lane, or a live
        // file would wait behind the whole history for it.
        queue_.Post(b->second, item->lane);
        queue_.Post(path, item->lane);
        continue;
      }
    }
    bool more = false;
    Status st = Process(*item, place, &more);
    if (!st.ok()) {
      if (Fatal(st)) break;
      StoreFailed(st, "while reading " + path);
      // The RunState may hold steps of points that were rolled back: reload it next time.
      runs_.erase(place.key());
      std::lock_guard lock(mu_);
      failed_.push_back(*item);
      continue;
    }
    if (more) {
      backlog_[dir] = path;
      if (!stop_) queue_.Post(path, item->lane);  // to the back: other files get their turn
    } else if (auto b = backlog_.find(dir); b != backlog_.end() && b->second == path) {
      backlog_.erase(b);
    }
  }
  FlushState();
}

ingest::RunState* IngestWorker::RunFor(const std::string& dir, const std::string& root,
                                       const std::string& path, Status* error) {
  const std::string key = Place{root, dir}.key();
  auto it = runs_.find(key);
  if (it == runs_.end()) {
    if (runs_.size() >= kMaxRunStates) {
      // Evict the least recently used run: every turn ends committed, so the store holds all
      // that its RunState knew.
      auto oldest = runs_.begin();
      for (auto i = runs_.begin(); i != runs_.end(); ++i)
        if (i->second.last_used < oldest->second.last_used) oldest = i;
      runs_.erase(oldest);
    }
    fs::path rel = fs::path(dir).lexically_relative(root);
    const std::string name = rel.empty() || rel == "." ? "." : rel.native();
    Result<int64_t> run_id = ingest::ResolveRun(*store_, root, name, {path});
    if (!run_id.ok()) {
      *error = run_id.status();
      return nullptr;
    }
    auto state = std::make_unique<ingest::RunState>(*store_, *run_id, root);
    if (Status st = state->Load(); !st.ok()) {
      *error = st;
      return nullptr;
    }
    it = runs_.emplace(key, CachedRun{std::move(state), 0}).first;
    log::Debug("run " + name + " (" + root + ")");
  }
  it->second.last_used = ++uses_;
  return it->second.state.get();
}

Status IngestWorker::MarkGone(const std::string& path) {
  Result<std::optional<int64_t>> run = ingest::SourceTracker(*store_).MarkGone(path);
  if (!run.ok()) return run.status();
  if (!*run) return Status::Ok();
  log::Info("file gone (its points are kept): " + path);
  if (on_committed_) on_committed_(**run, false);
  return Status::Ok();
}

Status IngestWorker::Process(const WorkQueue::Item& item, const Place& place, bool* more) {
  const std::string& path = item.path;
  const std::string& root = place.root;
  if (root.empty()) return Status::Ok();  // its root (or console glob) was removed from the config
  const bool object = objstore::IsS3Url(path);
  ObjectRoots::Entry entry;
  if (object) {
    if (!objects_) return Status::Ok();
    entry = objects_->Lookup(path);
    if (entry.state == ObjectRoots::Entry::kAbsent) return MarkGone(path);
    if (entry.state == ObjectRoots::Entry::kUnknown) return Status::Ok();  // posted again once listed
  }
  struct stat st;
  if (!object && ::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return MarkGone(path);
    log::Warning("cannot stat " + path + ": " + std::strerror(errno));
    return Status::Ok();
  }
  // No source any more (a console log whose glob was removed from the config, lying under a
  // root): left as it is, its data kept, like a file of a removed root.
  if (ingest::KindOf(path, options_) == sources::SourceKind::kNone) return Status::Ok();
  Status error;
  ingest::RunState* run = RunFor(place.dir, root, path, &error);
  if (!run) return error;
  ingest::Totals totals;
  // Every commit shows life: a long turn is not a hang.
  if (object) {
    TW_RETURN_IF_ERROR(ProcessObject(*run, path, entry, &totals, more));
  } else {
    TW_RETURN_IF_ERROR(
        ingester_->IngestFile(*run, path, &totals, [this](int64_t) { Beat(); }, more));
  }
  if (totals.files_read > 0 || totals.errors > 0) StoreWorked();  // it committed
  // Committed something diagnosis can see: new bytes read (points, or records that were not),
  // or damage recorded.
  const bool live = item.lane == Lane::kLive;
  if ((totals.files_read > 0 || totals.errors > 0) && on_committed_) {
    on_committed_(run->run_id(), live);
    // mlflow.db holds many runs: each one that got points or facts is handed over too.
    for (int64_t other : totals.other_runs) on_committed_(other, live);
  }
  if (live && totals.files_read > 0 && totals.non_finite > 0 && on_live_non_finite_)
    on_live_non_finite_(run->run_id());
  counters_.files_read += totals.files_read;
  counters_.points += totals.points();
  counters_.errors += totals.errors;
  counters_.bytes += totals.bytes;
  if (totals.errors > 0)
    log::Warning(path + ": " + std::to_string(totals.errors) +
                 " problem(s) reading it; see `trainwatch query \"SELECT * FROM ingest_errors\"`");
  if (totals.restarts > 0)
    log::Notice(path + ": the writer restarted from a checkpoint; earlier points superseded");
  return Status::Ok();
}

Status IngestWorker::ProcessObject(ingest::RunState& run, const std::string& path,
                                   const ObjectRoots::Entry& entry, ingest::Totals* totals,
                                   bool* more) {
  if (!s3_) {
    s3_ = std::make_unique<objstore::S3Client>(objects_->settings());
    s3_->SetCancel(&stop_);  // a stop abandons a slow read (what was read is committed)
  }
  objstore::ObjectSource bytes(*s3_, entry.bucket, entry.object);
  const ingest::SourceFacts facts{entry.object.size, 0, 0, entry.object.mtime, false};
  Status st = ingester_->IngestObject(run, path, bytes, facts, totals, [this](int64_t) { Beat(); }, more);
  // A read the store kept refusing (its errors are in ingest_errors): the listing posts the
  // object again even if it does not change, and the read goes on from the committed offset.
  if (bytes.failed()) objects_->Invalidate(path);
  return st;
}

}  // namespace tw::app

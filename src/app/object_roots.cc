#include "app/object_roots.h"

#include <chrono>

#include "base/clock.h"
#include "base/json.h"
#include "base/log.h"
#include "base/source_names.h"

namespace tw::app {

namespace {

// An object written to within this long is read before the history, as a file is.
constexpr double kLiveWindowSeconds = 600;

bool Under(const std::string& path, const std::string& root) {
  return path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/';
}

}  // namespace

ObjectRoots::ObjectRoots(objstore::S3Settings settings, int64_t poll_ms, WorkQueue& queue,
                         StateFn set_state)
    : settings_(std::move(settings)), poll_ms_(poll_ms), queue_(queue), set_state_(std::move(set_state)) {}

ObjectRoots::~ObjectRoots() { Stop(); }

void ObjectRoots::SetRoots(const std::vector<std::string>& roots, const std::vector<std::string>& known) {
  std::lock_guard lock(mu_);
  roots_.clear();
  for (const auto& r : roots)
    if (objstore::IsS3Url(r)) roots_.push_back(r);
  for (const auto& p : known)
    if (objstore::IsS3Url(p)) seeded_.insert(p);
  for (auto it = state_.begin(); it != state_.end();)
    it = std::find(roots_.begin(), roots_.end(), it->first) == roots_.end() ? state_.erase(it) : std::next(it);
  wake_.notify_all();
}

void ObjectRoots::Start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    if (roots_.empty()) return;
    stop_ = false;
  }
  cancel_ = false;
  client_ = std::make_unique<objstore::S3Client>(settings_);
  client_->SetCancel(&cancel_);
  thread_ = std::thread([this] { Loop(); });
}

void ObjectRoots::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cancel_ = true;
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

ObjectRoots::Entry ObjectRoots::Lookup(const std::string& path) const {
  std::lock_guard lock(mu_);
  Entry e;
  for (const auto& [root, st] : state_) {
    if (!Under(path, root)) continue;
    if (!st.listed) return e;
    auto it = st.objects.find(path);
    if (it == st.objects.end()) {
      e.state = Entry::kAbsent;
      return e;
    }
    e.state = Entry::kListed;
    e.bucket = path.substr(5, path.find('/', 5) - 5);
    e.object = it->second;
    return e;
  }
  return e;
}

void ObjectRoots::Invalidate(const std::string& path) {
  std::lock_guard lock(mu_);
  for (auto& [root, st] : state_)
    if (Under(path, root)) st.objects.erase(path);
}

void ObjectRoots::Loop() {
  for (;;) {
    std::vector<std::string> roots;
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      roots = roots_;
    }
    for (const auto& r : roots) ListRoot(r);
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, std::chrono::milliseconds(poll_ms_), [this] { return stop_; });
    if (stop_) return;
  }
}

void ObjectRoots::ListRoot(const std::string& root) {
  Result<objstore::S3Location> loc = objstore::ParseS3Url(root);
  Result<objstore::S3Client::Listing> listing =
      loc.ok() ? client_->List(*loc) : Result<objstore::S3Client::Listing>(loc.status());
  std::vector<std::string> failures;
  std::lock_guard lock(mu_);
  if (stop_) return;
  RootState& st = state_[root];
  if (!listing.ok()) {
    if (st.failure != listing.status().message())
      log::Warning(root + ": listing failed, tried again every " + JsonNumber(poll_ms_ / 1000.0) + " s: " +
                   listing.status().message());
    st.failure = listing.status().message();
  } else {
    if (!st.failure.empty()) log::Info(root + ": listing works again");
    st.failure.clear();
    for (const auto& s : listing->skipped) log::Debug(root + ": object not read: " + s);
    if (listing->cut)
      log::Warning(root + ": more than " + std::to_string(settings_.max_objects) +
                   " objects; only the first listed are read: make the prefix narrower");
    std::map<std::string, objstore::ObjectInfo> now;
    for (const auto& o : listing->objects) {
      const std::string path = loc->Url(o.key);
      // An SQLite database is opened by path: only on a local disk.
      if (!sources::IsSourcePath(path) || sources::KindOfPath(path) == sources::SourceKind::kMlflowDb)
        continue;
      now.emplace(path, o);
    }
    const double wall = UnixNow();
    std::vector<std::string> history;
    for (const auto& [path, o] : now) {
      auto before = st.objects.find(path);
      if (before != st.objects.end() && before->second.size == o.size && before->second.etag == o.etag) continue;
      seeded_.erase(path);
      if (wall - o.mtime < kLiveWindowSeconds) queue_.Post(path, Lane::kLive);
      else history.push_back(path);
    }
    for (const auto& [path, o] : st.objects)
      if (!now.count(path)) history.push_back(path);
    for (auto it = seeded_.begin(); it != seeded_.end();) {
      if (Under(*it, root) && !now.count(*it)) {
        history.push_back(*it);
        it = seeded_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& p : history) queue_.Post(p, Lane::kHistory);
    st.objects = std::move(now);
    st.listed = true;
  }
  for (const auto& [r, s] : state_)
    if (!s.failure.empty()) failures.push_back(r + ": " + s.failure);
  std::string text;
  for (const auto& f : failures) text += (text.empty() ? "" : "\n") + f;
  if (set_state_) set_state_("s3", text);
}

}  // namespace tw::app

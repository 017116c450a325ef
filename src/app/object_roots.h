// Object-store roots (s3://bucket/prefix, docs/sources.md "Object-store logdirs"): their own
// thread lists each root every [s3] poll_interval_seconds and posts to the work queue the
// objects that appeared, changed (size or ETag) or went since the last listing, as the rescan
// does for files; the catalog keeps what the last listing said of each object, for the writer
// to read that version (objstore::ObjectSource). A listing that fails (the network, wrong
// credentials, a hostile answer) is logged once per condition, shown in `trainwatch status`
// ("s3"), and tried again at the next poll.
// Threads: the lister's own; Lookup, Invalidate, SetRoots and PollNow from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "app/work_queue.h"
#include "objstore/s3_client.h"

namespace tw::app {

class ObjectRoots {
 public:
  using StateFn = std::function<void(const std::string& key, const std::string& value)>;
  ObjectRoots(objstore::S3Settings settings, int64_t poll_ms, WorkQueue& queue, StateFn set_state);
  ~ObjectRoots();  // stops and joins

  // The s3:// roots among `roots` (the others are ignored). `known`: the store's active
  // sources under them, so that one missing from the first listing is posted (gone).
  void SetRoots(const std::vector<std::string>& roots, const std::vector<std::string>& known = {});
  void Start();
  void Stop();
  const objstore::S3Settings& settings() const { return settings_; }

  struct Entry {
    enum State { kListed, kAbsent, kUnknown } state = kUnknown;  // unknown: root not listed yet
    std::string bucket;
    objstore::ObjectInfo object;
  };
  Entry Lookup(const std::string& path) const;
  // The writer could not read `path` to its end (the store kept failing): post it again at
  // the next listing even if it has not changed.
  void Invalidate(const std::string& path);

 private:
  void Loop();
  void ListRoot(const std::string& root);
  objstore::S3Settings settings_;
  int64_t poll_ms_;
  WorkQueue& queue_;
  StateFn set_state_;
  std::thread thread_;
  std::unique_ptr<objstore::S3Client> client_;  // the lister's own

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::atomic<bool> cancel_{false};  // set by Stop: a listing in flight is abandoned
  std::vector<std::string> roots_;
  std::set<std::string> seeded_;  // known paths not yet compared with a listing
  // Per root, its last successful listing (by path) and, when its last listing failed, why.
  struct RootState {
    bool listed = false;
    std::map<std::string, objstore::ObjectInfo> objects;
    std::string failure;
  };
  std::map<std::string, RootState> state_;
};

}  // namespace tw::app

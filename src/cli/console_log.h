// `diagnose --log` and `profiles --test`: a console log read on its own, outside any logdir.
#pragma once

#include <string>

#include "base/status.h"

namespace tw::cli {

// A store in a directory of its own under $TMPDIR (or /tmp), removed with the object.
class TempStore {
 public:
  TempStore() = default;
  explicit TempStore(std::string dir) : dir(std::move(dir)), db(this->dir + "/diagnose.db") {}
  TempStore(TempStore&& o) noexcept : dir(std::move(o.dir)), db(std::move(o.db)) { o.dir.clear(); }
  TempStore& operator=(TempStore&&) = delete;
  TempStore(const TempStore&) = delete;
  ~TempStore();

  std::string dir;
  std::string db;
};

// Reads `path` (or standard input for "-", kept as <dir>/stdin.log) as a whole console log
// into a fresh temporary store, with the profiles of `profiles_dir` before the built-ins.
// Errors: the file cannot be read, the profiles directory has a file that does not load, or
// nothing in the log was a metric any profile reads (said with the profiles tried).
Result<TempStore> IngestConsoleLog(const std::string& path, const std::string& profiles_dir);

}  // namespace tw::cli

#include "cli/console_log.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/file_io.h"
#include "decode/console_profiles.h"
#include "ingest/ingest.h"
#include "store/store.h"

namespace tw::cli {

namespace fs = std::filesystem;

TempStore::~TempStore() {
  if (dir.empty()) return;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

Result<TempStore> IngestConsoleLog(const std::string& path, const std::string& profiles_dir) {
  std::vector<std::string> errors;
  auto profiles = decode::ProfileSet::Load(profiles_dir, &errors);
  if (!errors.empty()) return InvalidArgument("console profiles: " + errors.front());
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/trainwatch-log-XXXXXX";
  if (!::mkdtemp(pattern.data())) return IoError(pattern + ": cannot make a directory");
  TempStore temp(pattern);
  std::string log = path;
  if (path == "-") {
    log = temp.dir + "/stdin.log";
    std::ofstream out(log, std::ios::binary);
    out << std::cin.rdbuf();
    if (!out) return IoError(log + ": cannot write the log read from standard input");
  } else {
    Result<InputFile> in = InputFile::Open(path);  // a FIFO or a directory is refused here
    if (!in.ok()) return in.status();
    std::error_code ec;
    log = fs::absolute(path, ec).lexically_normal().native();
  }
  Result<std::unique_ptr<store::Store>> store = store::Store::Open(temp.db);
  if (!store.ok()) return store.status();
  ingest::IngestOptions options;
  options.console_globs = {log};
  options.profiles = profiles;
  options.files_complete = true;
  options.follow_symlinks_outside_root = true;  // the user named this file
  ingest::Summary summary;
  TW_RETURN_IF_ERROR(ingest::IngestPaths(**store, {log}, options, &summary));
  if (summary.totals.files_unreadable > 0 || summary.files == 0)
    return IoError(path + ": cannot be read");
  if (summary.totals.scalars == 0) {
    std::string names;
    for (const auto& n : profiles->names()) names += (names.empty() ? "" : ", ") + n;
    return InvalidArgument(path + ": no line of it is a metric that a console profile reads "
                           "(tried: " + names + "; `trainwatch profiles --test " + path +
                           "` shows what each line matched)");
  }
  return temp;
}

}  // namespace tw::cli

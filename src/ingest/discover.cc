#include "ingest/discover.h"

#include "ingest/file_ingester.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include "base/file_io.h"
#include "base/source_names.h"

namespace tw::ingest {

namespace fs = std::filesystem;

Result<std::vector<DiscoveredRun>> DiscoverRuns(const std::string& root,
                                                std::vector<std::string>* warnings,
                                                const std::vector<std::string>& console_globs) {
  IngestOptions kinds;
  kinds.console_globs = console_globs;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return NotFound(root + ": not a directory");
  struct Found {
    std::string run, path;
    bool symlink;
  };
  std::vector<Found> found;
  std::map<std::pair<dev_t, ino_t>, size_t> by_inode;  // one path per real file
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) return IoError(root + ": cannot list: " + ec.message());
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) {
      if (warnings) warnings->push_back(root + ": error while listing: " + ec.message());
      ec.clear();
      continue;
    }
    std::error_code fec;
    const fs::path& p = it->path();
    if (it->is_directory(fec) && !it->is_symlink(fec) && !tw::CanEnter(p.native())) {
      if (warnings) warnings->push_back(p.native() + ": permission denied; the event files below it are not read");
      continue;
    }
    const sources::SourceKind kind = KindOf(p.native(), kinds);
    if (kind == sources::SourceKind::kNone) continue;
    if (!it->is_regular_file(fec)) {
      if (warnings && !it->is_directory(fec) && it->exists(fec))
        warnings->push_back(p.native() + ": named like an event file but not a regular file; not read");
      continue;
    }
    fs::path rel = fs::path(sources::RunDirOf(p.native(), kind)).lexically_relative(root);
    Found f{rel.empty() ? "." : rel.native(), p.native(), it->is_symlink(fec)};
    // W&B's sync_tensorboard links (or copies) event files into the run's files/: the same
    // file under two paths is read once, under the path that is not a link.
    struct stat st;
    if (::stat(p.c_str(), &st) == 0) {
      auto [at, fresh] = by_inode.try_emplace({st.st_dev, st.st_ino}, found.size());
      if (!fresh) {
        if (found[at->second].symlink && !f.symlink) found[at->second] = std::move(f);
        continue;
      }
    }
    found.push_back(std::move(f));
  }
  std::map<std::string, std::vector<std::string>> by_dir;  // sorted by run name
  for (auto& f : found) by_dir[f.run].push_back(std::move(f.path));
  std::vector<DiscoveredRun> runs;
  for (auto& [name, files] : by_dir) {
    // A run with a .wandb log has everything in it; the JSON lines are for older runs only,
    // history before system metrics (which are stored at the latest history step).
    const bool has_log = std::any_of(files.begin(), files.end(),
                                     [](const std::string& f) { return sources::IsWandbLog(f); });
    if (has_log) std::erase_if(files, [](const std::string& f) { return sources::IsWandbJsonl(f); });
    auto order = [](const std::string& f) { return std::make_pair(f.ends_with("/wandb-events.jsonl"), f); };
    std::sort(files.begin(), files.end(), [&](const std::string& a, const std::string& b) { return order(a) < order(b); });
    runs.push_back({name, std::move(files)});
  }
  return runs;
}

}  // namespace tw::ingest

#include "ingest/discover.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

namespace tw::ingest {

namespace fs = std::filesystem;

bool IsEventFileName(std::string_view name) {
  return name.find("tfevents") != std::string_view::npos && !name.ends_with(".profile-empty");
}

Result<std::vector<DiscoveredRun>> DiscoverRuns(const std::string& root,
                                                std::vector<std::string>* warnings) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return NotFound(root + ": not a directory");
  std::map<std::string, std::vector<std::string>> by_dir;  // sorted by run name
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) return IoError(root + ": cannot list: " + ec.message());
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) {
      if (warnings) warnings->push_back(root + ": error while listing: " + ec.message());
      ec.clear();
      continue;
    }
    std::error_code fec;
    if (!it->is_regular_file(fec)) continue;
    const fs::path& p = it->path();
    if (!IsEventFileName(p.filename().native())) continue;
    fs::path rel = p.parent_path().lexically_relative(root);
    std::string name = rel.empty() ? "." : rel.native();
    by_dir[name].push_back(p.native());
  }
  std::vector<DiscoveredRun> runs;
  for (auto& [name, files] : by_dir) {
    std::sort(files.begin(), files.end());
    runs.push_back({name, std::move(files)});
  }
  return runs;
}

}  // namespace tw::ingest

#include "watch/snapshot.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "base/file_io.h"
#include "base/source_names.h"

namespace tw::watch {

namespace fs = std::filesystem;

Snapshot Walk(const std::vector<std::string>& roots) {
  Snapshot snap;
  for (const auto& root : roots) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) continue;
    snap.dirs.push_back(root);
    if (!CanEnter(root)) {
      snap.unreadable.push_back(root);
      continue;
    }
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
      std::error_code e2;
      if (it->is_directory(e2) && !it->is_symlink(e2)) {
        snap.dirs.push_back(it->path().native());
        if (!CanEnter(it->path().native())) snap.unreadable.push_back(it->path().native());
        continue;
      }
      if (!sources::IsSourcePath(it->path().native())) continue;
      // Not only regular files: a FIFO named like an event file is posted too (once, as
      // anything new is), for the ingester to refuse it with one report.
      struct stat st;
      if (::stat(it->path().c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
      snap.files[it->path().native()] =
          FileStat{st.st_size, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                   static_cast<int64_t>(st.st_dev), static_cast<int64_t>(st.st_ino)};
    }
  }
  return snap;
}

std::vector<std::string> AddGlobMatches(const std::vector<std::string>& globs, size_t max_per_glob,
                                        Snapshot* snap) {
  std::vector<std::string> over;
  for (const auto& pattern : globs) {
    glob_t g{};
    // Unsorted: a sort is paid for only when there are too many matches to keep.
    const int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g);
    std::vector<std::string> paths;
    if (rc == 0) paths.assign(g.gl_pathv, g.gl_pathv + g.gl_pathc);  // else GLOB_NOMATCH (or out of memory)
    ::globfree(&g);
    if (paths.size() > max_per_glob) {
      over.push_back(pattern);
      std::sort(paths.begin(), paths.end());
      paths.resize(max_per_glob);
    }
    for (auto& p : paths) {
      struct stat st;
      if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      snap->files[std::move(p)] =
          FileStat{st.st_size, st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                   static_cast<int64_t>(st.st_dev), static_cast<int64_t>(st.st_ino)};
    }
  }
  return over;
}

std::vector<std::string> Diff(const Snapshot& before, const Snapshot& after) {
  std::vector<std::string> out;
  for (const auto& [path, st] : after.files) {
    auto it = before.files.find(path);
    if (it == before.files.end() || !(it->second == st)) out.push_back(path);
  }
  for (const auto& [path, st] : before.files)
    if (!after.files.count(path)) out.push_back(path);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tw::watch

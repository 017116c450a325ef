// The rescan: inotify is a hint, the periodic rescan is the truth. A Snapshot is what a walk
// of the roots saw (every event file's size, mtime and inode); Diff says which files changed
// since the last walk, appeared or disappeared. Pure, so it is tested without timers.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tw::watch {

struct FileStat {
  int64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t dev = 0, ino = 0;
  bool operator==(const FileStat&) const = default;
};

struct Snapshot {
  std::unordered_map<std::string, FileStat> files;  // event files by absolute path
  std::vector<std::string> dirs;                    // every directory under the roots
  std::vector<std::string> unreadable;              // directories the walk could not enter
};

// Walks each root (not following symlinked directories). Directories it cannot enter
// (permission denied) are skipped and listed in `unreadable`.
Snapshot Walk(const std::vector<std::string>& roots);

// Adds to `snap` the regular files (symlinks followed: the ingester refuses one that resolves
// outside its root) each glob(3) pattern of `globs` matches: the console logs that [[console]]
// names. Of each pattern's matches at most `max_per_glob` are taken, the first in name order
// when there are more; returns the patterns that matched more. Directories the expansion cannot enter are
// skipped. (A leading '.' of a name is matched only by a pattern that writes it, as in a shell.)
std::vector<std::string> AddGlobMatches(const std::vector<std::string>& globs, size_t max_per_glob,
                                        Snapshot* snap);

// Paths that are new, changed or gone between `before` and `after`, sorted.
std::vector<std::string> Diff(const Snapshot& before, const Snapshot& after);

}  // namespace tw::watch

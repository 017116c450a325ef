// The identity of source files, in one place: which file a path holds, whether it is the one
// read before (its device and inode, its first bytes, the CRC of the bytes before its committed
// offset), moved (a run directory renamed), replaced or rewritten in place (a new generation),
// refused (not a regular file, outside its root), or gone. Every format's ingester reads through
// the row the tracker hands it; what a new generation does with the old one's points is the
// format's (sources::SourceKind), said here:
//   - most formats: the old generation's points are superseded, the new file read from 0;
//   - an HF trainer state, and a metrics table rewritten in place (the same inode): the old
//     points stay, and the new generation stores only what is new (docs/sources.md);
//   - mlflow.db: written in place all the time, its identity is its inode alone.
// The writer thread only (it holds the store's transaction).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/source_names.h"
#include "base/status.h"
#include "read/byte_source.h"
#include "store/store.h"

namespace tw::ingest {

class RunState;
struct Totals;

// A file's first bytes (up to 64; fewer if it is shorter, none if unreadable). With the device
// and inode they identify it: the first record of an event file holds its writer's wall time.
// Opened with InputFile: a FIFO or anything else not a regular file has no head.
constexpr size_t kHeadBytes = 64;
std::string ReadFileHead(const std::string& path);
// Whether a file whose first bytes are `now` can be the one recorded with `known`: one is a
// prefix of the other (a file grows; a row from before heads were kept has none).
bool SameFileHead(const std::string& known, const std::string& now);
// CRC-32C of the up to 4 KiB before `offset` of `bytes`; none when unreadable (or null).
std::optional<int64_t> TailCrc(read::ByteSource* bytes, int64_t offset);

// What identifies the bytes at a path, as the tracker compares them with the source row: a
// local file's size, device, inode and mtime (its fstat); an object's size and time, with no
// device or inode (local false): an object is known by its path, first bytes and tail CRC,
// and is never taken for a moved file.
struct SourceFacts {
  int64_t size = 0;
  int64_t dev = 0, ino = 0;
  double mtime = 0;  // seconds since the epoch
  bool local = true;
  static SourceFacts Of(const struct stat& st) {
    return {static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_dev),
            static_cast<int64_t>(st.st_ino),
            static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9, true};
  }
};

class SourceTracker {
 public:
  explicit SourceTracker(store::Store& store) : store_(store) {}

  struct Decision {
    bool read = false;        // false: nothing to read (nothing new; a second name of a file
                              // read under its first; a rejected file reported once already)
    store::SourceRow source;  // with read: the row reading goes on in, status active
  };
  // The file opened at `path` (`facts` its identity, `head` its first bytes, `bytes` what it
  // holds) in `run`. With read, the store's transaction is open and holds the move or the new
  // generation: the caller commits it with what it reads, or rolls it back.
  Result<Decision> Track(RunState& run, const std::string& path, const SourceFacts& facts,
                         const std::string& head, read::ByteSource* bytes,
                         sources::SourceKind kind);
  // A path refused without a byte of it read (`kind`: outside_root, not_regular_file),
  // reported once until something else is at the path.
  Status Refuse(RunState& run, const std::string& path, std::string_view kind,
                const std::string& detail, Totals* totals);
  // The file at `path` no longer exists: its source is marked gone (its points are kept).
  // Returns the run it belonged to, or none when there was no active source there.
  Result<std::optional<int64_t>> MarkGone(const std::string& path);

 private:
  store::Store& store_;
};

}  // namespace tw::ingest

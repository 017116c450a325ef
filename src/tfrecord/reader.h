// TFRecord framing, read incrementally and defensively.
//
//   u64 LE length | u32 masked CRC32C(length bytes) | data[length] | u32 masked CRC32C(data)
//
// Scanner cuts records out of a window of a file's bytes held in memory; it knows nothing of
// files, protobufs or SQLite, so it is tested byte by byte and fuzzed. FileReader feeds a
// Scanner from a file, from a committed offset to the current end, and closes nothing it
// does not own. What the reader guarantees:
//   - a record is returned only when every byte of it is present and both CRCs match;
//   - a record that is not all there yet ends the read: position() stays at its first byte,
//     so reading again after the file grows yields exactly what one full read would have;
//   - a bad data CRC is reported (offset, length) and that record skipped;
//   - a bad length CRC (or an implausible length) is reported, then the reader scans forward
//     for the next offset whose 12-byte header checks out and continues there; the scan
//     survives a window boundary and a restart through ScanState;
//   - a file that is text, not TFRecord (a Git LFS pointer, say), is reported once as such;
//   - one call never scans more than about a chunk of damage without returning (kYield), so a
//     caller can commit the scan position, give other files their turn and stop: a 16 GiB
//     file of garbage is a long series of short turns, not one long one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/file_io.h"
#include "base/status.h"

namespace tw::tfrecord {

constexpr size_t kHeaderSize = 12;  // length + masked CRC of the length
constexpr size_t kFooterSize = 4;   // masked CRC of the data
// Larger lengths are treated as corruption. Graph defs of a few hundred MiB exist; 2 GiB is
// protobuf's own message limit, so nothing real is larger.
constexpr uint64_t kMaxRecordLength = (uint64_t{1} << 31) - 1;
// How much of a file's start is read at once, so that a file that is not TFRecord can be
// named (e.g. "version https://git-lfs..." is a Git LFS pointer).
constexpr size_t kSniffBytes = 64;

enum class ProblemKind {
  kBadLengthCrc,       // header CRC mismatch; resync follows
  kImplausibleLength,  // header CRC fine but length > kMaxRecordLength; resync follows
  kBadDataCrc,         // record skipped
  kResynced,           // where the scan after a bad header found the next valid record
  kNotTfRecord,        // the file is not TFRecord at all; nothing more is read from it
};
const char* ProblemKindName(ProblemKind kind);

struct Problem {
  ProblemKind kind = ProblemKind::kBadDataCrc;
  uint64_t offset = 0;  // file offset where the damaged bytes start
  uint64_t length = 0;  // bytes dropped (0 when not yet known)
  std::string detail;
};

// What must survive between two reads of one file besides the offset: whether we are in the
// middle of scanning for a valid header after damage, and since where.
struct ScanState {
  bool resyncing = false;
  uint64_t resync_from = 0;  // offset of the damaged header
  bool rejected = false;     // not a TFRecord file; never read again at this generation
};

class Scanner {
 public:
  enum class Step { kRecord, kProblem, kNeedMore };

  // `window` holds the file's bytes starting at file offset `base`.
  Scanner(std::string_view window, uint64_t base, ScanState state)
      : w_(window), base_(base), state_(state) {}

  // kRecord: record()/record_offset() are valid until the next call.
  // kProblem: problem() says what; call again to continue.
  // kNeedMore: the window is consumed up to position(); at least needed() bytes from
  //            position() are required before anything more can be said.
  Step Next();

  std::string_view record() const { return record_; }
  uint64_t record_offset() const { return record_offset_; }
  const Problem& problem() const { return problem_; }
  uint64_t position() const { return base_ + pos_; }
  uint64_t needed() const { return needed_; }
  const ScanState& state() const { return state_; }

 private:
  Step Resync();
  Step Fail(ProblemKind kind, uint64_t length, std::string detail);

  std::string_view w_;
  uint64_t base_;
  size_t pos_ = 0;
  ScanState state_;
  std::string_view record_;
  uint64_t record_offset_ = 0;
  uint64_t needed_ = 0;
  Problem problem_;
};

// Reads one file from a committed offset to its current end. Opens the file for the
// duration of the read only (no descriptor stays open per watched file).
class FileReader {
 public:
  // kYield: a chunk of bytes was skipped (damage being scanned) and nothing found yet; position()
  // and state() are a valid resume point. Call again to go on.
  enum class Step { kRecord, kProblem, kYield, kEnd };

  FileReader(std::string path, uint64_t offset, ScanState state, size_t chunk = 1 << 20);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Reads `file` (already opened and checked by the caller) instead of opening the path
  // again: what was checked is what is read. Open() must still be called.
  void Adopt(InputFile file);
  Status Open();
  // kEnd: all complete records up to the end of the file have been returned; position()
  // is where the next read must start (a partial record's first byte, or the end).
  // I/O errors end the read too: check status().
  Step Next();

  std::string_view record() const { return scanner_.record(); }
  uint64_t record_offset() const { return scanner_.record_offset(); }
  const Problem& problem() const { return scanner_.problem(); }
  uint64_t position() const { return scanner_.position(); }
  const ScanState& state() const { return scanner_.state(); }
  const Status& status() const { return status_; }
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  bool Refill(uint64_t needed);

  std::string path_;
  int fd_ = -1;
  size_t chunk_;
  std::string buf_;
  size_t buf_len_ = 0;
  uint64_t buf_base_;
  bool eof_ = false;
  uint64_t bytes_read_ = 0;
  Scanner scanner_;
  Status status_;
};

}  // namespace tw::tfrecord

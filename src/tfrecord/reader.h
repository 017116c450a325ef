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

#include "read/file_reader.h"
#include "read/problem.h"

namespace tw::tfrecord {

constexpr size_t kHeaderSize = 12;  // length + masked CRC of the length
constexpr size_t kFooterSize = 4;   // masked CRC of the data
// Larger lengths are treated as corruption. Graph defs of a few hundred MiB exist; 2 GiB is
// protobuf's own message limit, so nothing real is larger.
constexpr uint64_t kMaxRecordLength = (uint64_t{1} << 31) - 1;
// How much of a file's start is read at once, so that a file that is not TFRecord can be
// named (e.g. "version https://git-lfs..." is a Git LFS pointer).
constexpr size_t kSniffBytes = 64;

using read::Problem;
using read::ProblemKind;
using read::ProblemKindName;
using read::ScanState;

class Scanner : public read::ScannerDefaults {
 public:
  using Step = read::ScanStep;
  static constexpr size_t kFirstWindow = kSniffBytes;

  // `window` holds the file's bytes starting at file offset `base`.
  Scanner(std::string_view window, uint64_t base, ScanState state, Options = {})
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
  Options options() const { return {}; }
  bool stalled() const { return state_.rejected; }

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

// Reads one file from a committed offset to its current end (read/file_reader.h).
using FileReader = read::FileReader<Scanner>;

}  // namespace tw::tfrecord

// The framing of W&B's `.wandb` transaction logs, read incrementally and defensively.
//
//   file header: ":W&B" | u16 LE magic 0xBEE1 | u8 version (0; 1 accepted)
//   then LevelDB's log format in 32,768-byte blocks counted from file offset 0 (the header
//   sits inside block 0): chunks of u32 LE CRC-32 (zlib's, unmasked, over the type byte and
//   the payload) | u16 LE length | u8 type (FULL 1, FIRST 2, MIDDLE 3, LAST 4) | payload.
//   Fewer than 7 bytes left in a block are padding. A record is one FULL chunk, or FIRST,
//   MIDDLE..., LAST; each is one serialized wandb_internal.Record.
//
// The Go writer of SDK 0.16.x-0.17.5 counted blocks from offset 7 instead (blocks start at
// 7 + k*32768); which of the two a file uses is seen at the first block boundary, where only
// one of the two candidate chunks checks out (at a later one when the first is damaged), or
// by a chunk that ends past 32768, which only origin 7's first block has room for. Until
// then, only chunks that start at least 7 bytes before 32768 and end by it are read.
//
// What the reader guarantees (the same as tfrecord::FileReader):
//   - a record is returned only when all its chunks are present and their CRCs match;
//   - a record not all there yet ends the read with position() at its first chunk, so that
//     reading again after the file grows yields exactly what one full read would have;
//   - position() never passes the file's end (it is committed as the offset to read on from);
//   - damage is reported with its offset, and reading resumes at the next FULL or FIRST
//     chunk, so every intact record is kept: a chunk that fails its CRC is dropped alone (with
//     the rest of its record); a length past the block's end or an unknown type drops the
//     rest of the block, since nothing in it can be trusted to say where a chunk starts (it
//     is reported once the whole block is there: until then the read stops at the chunk);
//   - a file that is not a W&B log is reported once as such and not read further.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "read/file_reader.h"
#include "read/problem.h"

namespace tw::wandb {

constexpr uint64_t kBlockSize = 32768;
constexpr uint64_t kChunkHeaderSize = 7;
constexpr uint64_t kFileHeaderSize = 7;

enum ChunkType : uint8_t { kZeroType = 0, kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4 };

// Where blocks start: at offset 0 (every writer but one), or at 7 (Go core, SDK 0.16-0.17.5).
enum class BlockOrigin { kUnknown, kZero, kSeven };

using read::Problem;
using read::ProblemKind;
using read::ProblemKindName;
using read::ScanState;

// The largest record gathered from its chunks. W&B's records (a history row, the config, a
// summary) are kilobytes to a few MiB; a chain of MIDDLE chunks longer than this is damage or a
// hostile file, and gathering it whole would hold it in memory twice (the record and the
// window it is read from).
constexpr size_t kMaxRecordBytes = size_t{256} << 20;

// What a reader of one log learns and keeps from one window to the next.
struct LogOptions {
  BlockOrigin origin = BlockOrigin::kUnknown;  // as given, or as Open or a chunk settled it
  size_t max_record = kMaxRecordBytes;
  int version = -1;                            // the header's version byte, once read
};

// Checks the 7-byte file header; `head` may be shorter (then only what is there is checked).
// On success *version holds the version byte when present.
Status CheckFileHeader(std::string_view head, int* version);

// Cuts records out of a window of a file's bytes held in memory. Knows nothing of files or
// protobufs, so it is tested byte by byte.
class Scanner : public read::ScannerDefaults {
 public:
  using Step = read::ScanStep;
  using Options = LogOptions;
  // Blocks are counted from offset 0, but records start after the file header.
  static constexpr uint64_t kFirstOffset = kFileHeaderSize;
  // A record larger than the window is gathered again from its first chunk after a refill.
  static constexpr bool kGeometricWindow = true;

  // `window` holds the file's bytes from offset `base` (>= kFileHeaderSize).
  Scanner(std::string_view window, uint64_t base, ScanState state, BlockOrigin origin,
          size_t max_record = kMaxRecordBytes)
      : w_(window), base_(base), cur_(base), consumed_(base), state_(state), origin_(origin),
        max_record_(max_record) {}
  Scanner(std::string_view window, uint64_t base, ScanState state, const LogOptions& options)
      : Scanner(window, base, state, options.origin, options.max_record) {
    version_ = options.version;
  }

  // FileReader's hook: checks the file header (a foreign file is rejected; one shorter than
  // the header waits) and finds the block origin when the file reaches a block boundary.
  static Result<read::Opening> Open(const read::FileProbe& file, LogOptions* options);

  // kRecord: record()/record_offset() are valid until the next call.
  // kProblem: problem() says what; call again to continue.
  // kNeedMore: everything before position() is consumed; more bytes (at least needed() past
  //            position()), or the block origin, are required to go on.
  Step Next();

  std::string_view record() const { return record_; }
  uint64_t record_offset() const { return record_offset_; }
  const Problem& problem() const { return problem_; }
  uint64_t position() const { return consumed_; }
  uint64_t needed() const { return needed_; }
  const ScanState& state() const { return state_; }
  // Whether the last kNeedMore was for want of the block origin rather than of bytes.
  bool needs_origin() const { return needs_origin_; }
  // The block origin: as given, or kSeven once a chunk only origin 7 has room for was read.
  BlockOrigin origin() const { return origin_; }
  LogOptions options() const { return {origin_, max_record_, version_}; }
  // Wanting the origin is wanting the bytes of the first block boundary: the file has not
  // reached it yet (Open decides it whenever it can).
  bool stalled() const { return needs_origin_ && origin_ == BlockOrigin::kUnknown; }

 private:
  uint64_t BlockEnd(uint64_t pos) const;
  Step NeedMore(uint64_t until);
  // Reports damage at `at` and drops everything up to `until`.
  Step Damage(ProblemKind kind, uint64_t at, uint64_t until, std::string what);

  std::string_view w_;
  uint64_t base_;
  uint64_t cur_;       // next chunk to look at
  uint64_t consumed_;  // everything before this is done with (a record's first chunk while
                       // its fragments are being gathered)
  ScanState state_;
  BlockOrigin origin_;
  size_t max_record_;
  int version_ = -1;
  std::string assembled_;  // fragments of the record being gathered
  bool assembling_ = false;
  std::string_view record_;
  uint64_t record_offset_ = 0;
  uint64_t needed_ = 0;
  bool needs_origin_ = false;
  Problem problem_;
};

// Decides the block origin from the chunk candidates at the first block boundary (32768 for
// origin 0, 32775 for origin 7) in `boundary`, the file's bytes from offset 32768 on, of a
// file `file_size` bytes long. kUnknown while neither candidate is complete yet. `*checked`
// (if given) says whether a candidate checked out; when none does but both are whole (the
// boundary is damaged), origin 0 is a guess. Later boundaries (k * 32768) are read the same
// way, with `boundary` from there and `file_size` less (k - 1) * 32768.
BlockOrigin DetectBlockOrigin(std::string_view boundary, uint64_t file_size,
                              bool* checked = nullptr);

// Reads one file from a committed offset to its current end (read/file_reader.h).
using FileReader = read::FileReader<Scanner>;

}  // namespace tw::wandb

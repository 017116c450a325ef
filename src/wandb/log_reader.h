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

#include "base/file_io.h"
#include "base/status.h"

namespace tw::wandb {

constexpr uint64_t kBlockSize = 32768;
constexpr uint64_t kChunkHeaderSize = 7;
constexpr uint64_t kFileHeaderSize = 7;

enum ChunkType : uint8_t { kZeroType = 0, kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4 };

// Where blocks start: at offset 0 (every writer but one), or at 7 (Go core, SDK 0.16-0.17.5).
enum class BlockOrigin { kUnknown, kZero, kSeven };

enum class ProblemKind {
  kBadChecksum,      // a chunk's CRC does not match; it (and its record) is dropped
  kBadChunk,         // a length past the block's end or an unknown type; ditto
  kBrokenFragments,  // a MIDDLE/LAST without a FIRST, or a FIRST cut off by a new record
  kNotWandb,         // the file is not a W&B transaction log; nothing more is read
  kRecordTooLarge,   // a record's chunks add up to more than the reader takes; it is dropped
};

// The largest record gathered from its chunks. W&B's records (a history row, the config, a
// summary) are kilobytes to a few MiB; a chain of MIDDLE chunks longer than this is damage or a
// hostile file, and gathering it whole would hold it in memory twice (the record and the
// window it is read from).
constexpr size_t kMaxRecordBytes = size_t{256} << 20;
const char* ProblemKindName(ProblemKind kind);

struct Problem {
  ProblemKind kind = ProblemKind::kBadChecksum;
  uint64_t offset = 0;  // file offset where the damaged bytes start
  uint64_t length = 0;  // bytes dropped
  std::string detail;
};

// What must survive between two reads of one file besides the offset: whether reading is
// skipping the fragments of a damaged record, looking for the next FULL or FIRST chunk.
struct ScanState {
  bool resyncing = false;
  uint64_t resync_from = 0;  // where the damage began
};

// Checks the 7-byte file header; `head` may be shorter (then only what is there is checked).
// On success *version holds the version byte when present.
Status CheckFileHeader(std::string_view head, int* version);

// Cuts records out of a window of a file's bytes held in memory. Knows nothing of files or
// protobufs, so it is tested byte by byte.
class Scanner {
 public:
  enum class Step { kRecord, kProblem, kNeedMore };

  // `window` holds the file's bytes from offset `base` (>= kFileHeaderSize).
  Scanner(std::string_view window, uint64_t base, ScanState state, BlockOrigin origin,
          size_t max_record = kMaxRecordBytes)
      : w_(window), base_(base), cur_(base), consumed_(base), state_(state), origin_(origin),
        max_record_(max_record) {}

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

// Reads one file from a committed offset to its current end; opens it only for the read.
class FileReader {
 public:
  // kYield: about a chunk of bytes (padding, a damaged record's fragments) was passed with
  // nothing to return; position() and state() are a valid resume point. Call again.
  enum class Step { kRecord, kProblem, kYield, kEnd };

  FileReader(std::string path, uint64_t offset, ScanState state, size_t chunk = 1 << 20,
             size_t max_record = kMaxRecordBytes);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // Reads `file` (already opened and checked by the caller) instead of opening the path
  // again: what was checked is what is read. Open() must still be called.
  void Adopt(InputFile file);
  // Opens the file (InputFile: never blocks, regular files only), checks its header and
  // finds its block origin when it can be known. An unreadable file is an error; a foreign
  // one is reported by the first Next().
  Status Open();
  // kEnd: every complete record has been returned; position() is where the next read must
  // start. I/O errors end the read too: check status().
  Step Next();

  std::string_view record() const { return scanner_.record(); }
  uint64_t record_offset() const { return scanner_.record_offset(); }
  // (Not `problem_ ?`: Next() clears problem_ as it returns the rejection, so the caller got
  // the scanner's empty problem instead: a foreign file was logged as a bad_checksum with no
  // detail, never marked rejected, and logged again at every read.)
  const Problem& problem() const { return rejected_ ? problem_storage_ : scanner_.problem(); }
  uint64_t position() const {
    return rejected_ || header_pending_ ? start_offset_ : scanner_.position();
  }
  const ScanState& state() const { return scanner_.state(); }
  const Status& status() const { return status_; }
  bool rejected() const { return rejected_; }
  int version() const { return version_; }
  BlockOrigin origin() const {
    return origin_ != BlockOrigin::kUnknown ? origin_ : scanner_.origin();
  }

 private:
  bool Refill(uint64_t needed);

  std::string path_;
  int fd_ = -1;
  size_t chunk_;
  size_t max_record_;
  uint64_t start_offset_;
  uint64_t size_ = 0;  // at Open
  std::string buf_;
  size_t buf_len_ = 0;
  uint64_t buf_base_;
  BlockOrigin origin_ = BlockOrigin::kUnknown;
  int version_ = -1;
  bool rejected_ = false;
  bool header_pending_ = false;  // the file is shorter than its header: nothing to read yet
  bool problem_ = false;         // problem_storage_ holds a problem Next() has yet to report
  Problem problem_storage_;      // why the file was rejected
  Scanner scanner_;
  Status status_;
};

}  // namespace tw::wandb

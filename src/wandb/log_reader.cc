#include "wandb/log_reader.h"

#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tw::wandb {

namespace {

constexpr char kMagic[kFileHeaderSize - 1] = {':', 'W', '&', 'B', '\xE1', '\xBE'};

uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // little-endian hosts only (x86-64, arm64)
  return v;
}
uint16_t LoadU16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// CRC-32 (zlib) of the type byte followed by the payload.
uint32_t ChunkCrc(uint8_t type, const char* payload, size_t n) {
  uLong crc = crc32(0L, &type, 1);
  return static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(payload), n));
}

bool ChunkValid(const char* h, uint64_t available, uint64_t room) {
  const uint8_t type = static_cast<uint8_t>(h[6]);
  const uint16_t len = LoadU16(h + 4);
  return type >= kFull && type <= kLast && kChunkHeaderSize + len <= std::min(available, room) &&
         ChunkCrc(type, h + kChunkHeaderSize, len) == LoadU32(h);
}

const char* TypeName(uint8_t t) {
  switch (t) {
    case kFull: return "FULL";
    case kFirst: return "FIRST";
    case kMiddle: return "MIDDLE";
    case kLast: return "LAST";
    default: return "unknown";
  }
}

}  // namespace

const char* ProblemKindName(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::kBadChecksum: return "bad_checksum";
    case ProblemKind::kBadChunk: return "bad_chunk";
    case ProblemKind::kBrokenFragments: return "broken_fragments";
    case ProblemKind::kNotWandb: return "not_wandb";
    case ProblemKind::kRecordTooLarge: return "record_too_large";
  }
  return "unknown";
}

Status CheckFileHeader(std::string_view head, int* version) {
  const size_t n = std::min<size_t>(head.size(), sizeof kMagic);
  if (std::memcmp(head.data(), kMagic, n) != 0) {
    const bool text = head.starts_with("version https://git-lfs");
    return InvalidArgument(text ? "a Git LFS pointer, not the W&B log it stands for"
                                : "not a W&B transaction log (the file does not start with "
                                  "\":W&B\" and magic 0xBEE1)");
  }
  if (head.size() >= kFileHeaderSize) {
    const auto v = static_cast<uint8_t>(head[kFileHeaderSize - 1]);
    if (v > 1)
      return InvalidArgument("W&B log format version " + std::to_string(v) +
                             " is newer than this reader knows (0 and 1)");
    if (version) *version = v;
  }
  return Status::Ok();
}

BlockOrigin DetectBlockOrigin(std::string_view b, uint64_t file_size, bool* checked) {
  // Candidate chunk headers: at 32768 (origin 0) and at 32775 (origin 7). Each must fit the
  // block its origin implies and check out.
  if (checked) *checked = true;
  const uint64_t avail0 = b.size();
  if (avail0 >= kChunkHeaderSize) {
    const uint64_t len = LoadU16(b.data() + 4);
    // An empty FIRST never starts a block: writers emit one only when exactly 7 bytes are
    // left in a block. At 32768 it is an origin-7 file's, whose first block ends at 32775;
    // taken for origin 0's next block it made every later block be read 7 bytes off.
    const bool empty_first = len == 0 && static_cast<uint8_t>(b[6]) == kFirst;
    if (!empty_first && kChunkHeaderSize + len <= avail0 &&
        ChunkValid(b.data(), avail0, kBlockSize))
      return BlockOrigin::kZero;
  }
  if (avail0 >= 7 + kChunkHeaderSize) {
    const char* h = b.data() + 7;
    const uint64_t len = LoadU16(h + 4);
    if (kChunkHeaderSize + len <= avail0 - 7 && ChunkValid(h, avail0 - 7, kBlockSize))
      return BlockOrigin::kSeven;
  }
  if (checked) *checked = false;
  // Neither checks out. If both candidates are whole, the boundary is damaged: read on with
  // the usual origin and let the scanner report it.
  auto whole = [&](uint64_t at) {
    if (avail0 < at + kChunkHeaderSize) return false;
    return at + kChunkHeaderSize + LoadU16(b.data() + at + 4) <= avail0;
  };
  if (whole(0) && whole(7)) return BlockOrigin::kZero;
  if (file_size >= kBlockSize + 7 + kBlockSize) return BlockOrigin::kZero;  // cannot be pending
  return BlockOrigin::kUnknown;
}

uint64_t Scanner::BlockEnd(uint64_t pos) const {
  const uint64_t o = origin_ == BlockOrigin::kSeven ? 7 : 0;
  return o + ((pos - o) / kBlockSize + 1) * kBlockSize;
}

Scanner::Step Scanner::NeedMore(uint64_t until) {
  needed_ = until > consumed_ ? until - consumed_ : 1;
  // Everything gathered since consumed_ is read again when the bytes are there.
  cur_ = consumed_;
  assembling_ = false;
  assembled_.clear();
  return Step::kNeedMore;
}

Scanner::Step Scanner::Damage(ProblemKind kind, uint64_t at, uint64_t until,
                              std::string what) {
  const uint64_t from = assembling_ ? consumed_ : at;
  problem_.kind = kind;
  problem_.offset = at;
  problem_.length = until - from;
  problem_.detail = what + "; dropped " + std::to_string(until - at) + " bytes, to offset " +
                    std::to_string(until);
  if (assembling_)
    problem_.detail += ", and the record begun at offset " + std::to_string(consumed_);
  assembling_ = false;
  assembled_.clear();
  // Fragments of the damaged record that follow are skipped up to the next record's start.
  state_.resyncing = true;
  state_.resync_from = at;
  cur_ = consumed_ = until;
  return Step::kProblem;
}

Scanner::Step Scanner::Next() {
  needs_origin_ = false;
  for (;;) {
    const uint64_t end = base_ + w_.size();
    // Until the origin is known, only chunks that start at least a header's length before
    // the first possible boundary (32768) and end by it are read the same way under both.
    const bool origin_known = origin_ != BlockOrigin::kUnknown;
    const uint64_t block_end = origin_known ? BlockEnd(cur_) : kBlockSize;
    // (Fewer than 7 bytes before 32768 are padding at origin 0 but room for a chunk at
    // origin 7; a chunk that starts before them is read alike under both, see below.)
    if (!origin_known && cur_ + kChunkHeaderSize > kBlockSize) {
      needs_origin_ = true;
      return NeedMore(cur_ + kChunkHeaderSize);
    }
    if (block_end - cur_ < kChunkHeaderSize) {  // trailer padding
      // Skipped once it is all there. position() must never pass the bytes it was given: a
      // caller commits it as the file's offset, and an offset past a file's end reads as a
      // truncated file (the ingester then read the whole file again as a new one), and
      // FileReader::Refill's arithmetic underflowed (a crash). A writer leaves the padding
      // unwritten until its next record.
      if (end < block_end) return NeedMore(block_end);
      cur_ = block_end;
      if (!assembling_) consumed_ = cur_;
      continue;
    }
    if (end < cur_ + kChunkHeaderSize) return NeedMore(cur_ + kChunkHeaderSize);
    const char* h = w_.data() + (cur_ - base_);
    const uint32_t crc = LoadU32(h);
    const uint16_t len = LoadU16(h + 4);
    const auto type = static_cast<uint8_t>(h[6]);
    const uint64_t chunk_end = cur_ + kChunkHeaderSize + len;
    if (type == kZeroType && len == 0 && crc == 0) {
      // Zeros where a chunk should be: padding to the block's end. At the file's end it may
      // be space not written yet: wait until the block is whole.
      if (!origin_known) {
        needs_origin_ = true;
        return NeedMore(cur_ + kChunkHeaderSize);
      }
      if (end < block_end) return NeedMore(block_end);
      cur_ = block_end;
      if (!assembling_) consumed_ = cur_;
      continue;
    }
    const char* payload = h + kChunkHeaderSize;
    if (type < kFull || type > kLast) {
      // The rest of the block is dropped once it is all there: position() never passes the
      // bytes given (see the padding above).
      if (end < block_end) return NeedMore(block_end);
      return Damage(ProblemKind::kBadChunk, cur_, block_end,
                    "chunk at offset " + std::to_string(cur_) + " has unknown type " +
                        std::to_string(type));
    }
    if (chunk_end > block_end) {
      if (!origin_known) {
        // Past 32768, only origin 7's first block (to 32775) has room for it: a whole chunk
        // there that checks out settles the origin (a file that ends before 32775 has no
        // boundary to tell it by).
        if (chunk_end <= kBlockSize + kFileHeaderSize) {
          if (end < chunk_end) return NeedMore(chunk_end);
          if (ChunkCrc(type, payload, len) == crc) {
            origin_ = BlockOrigin::kSeven;
            continue;
          }
        }
        needs_origin_ = true;
        return NeedMore(chunk_end);
      }
      if (end < block_end) return NeedMore(block_end);
      return Damage(ProblemKind::kBadChunk, cur_, block_end,
                    std::string(TypeName(type)) + " chunk at offset " + std::to_string(cur_) +
                        " claims " + std::to_string(len) + " bytes, past its block's end");
    }
    // A chunk that ends by 32768 is read alike under both origins, so it needs neither: only
    // where the next one starts does (held back by the check at the top). Requiring 7 more
    // bytes kept a record ending in the last 7 bytes before 32768 from ever being returned
    // by a file that ends there.
    if (end < chunk_end) return NeedMore(chunk_end);  // the chunk is not all written yet
    if (ChunkCrc(type, payload, len) != crc) {
      // The length fits the block, so most likely only this chunk's bytes are damaged: skip
      // it alone. Had the length been damaged, what follows will not check out either, and
      // the rest of the block goes then (W&B's Go reader drops the block at once; this keeps
      // the intact records behind a damaged one).
      return Damage(ProblemKind::kBadChecksum, cur_, chunk_end,
                    std::string(TypeName(type)) + " chunk of " + std::to_string(len) +
                        " bytes at offset " + std::to_string(cur_) + " fails its CRC-32");
    }
    const uint64_t at = cur_;
    cur_ = chunk_end;
    if (state_.resyncing) {
      // Fragments of the damaged record: skip to the next record's start.
      if (type == kMiddle || type == kLast) {
        consumed_ = cur_;
        continue;
      }
      state_.resyncing = false;
    }
    switch (type) {
      case kFull:
      case kFirst:
        if (assembling_) {
          // The record being gathered never got its LAST chunk.
          problem_ = {ProblemKind::kBrokenFragments, consumed_, at - consumed_,
                      "the record begun at offset " + std::to_string(consumed_) +
                          " has no LAST chunk before the new record at " + std::to_string(at) +
                          "; dropped"};
          assembling_ = false;
          assembled_.clear();
          consumed_ = cur_ = at;
          return Step::kProblem;
        }
        if (type == kFull) {
          record_ = std::string_view(payload, len);
          record_offset_ = at;
          consumed_ = cur_;
          return Step::kRecord;
        }
        assembling_ = true;
        assembled_.assign(payload, len);
        consumed_ = at;
        continue;
      case kMiddle:
      case kLast:
        if (!assembling_) {
          problem_ = {ProblemKind::kBrokenFragments, at, cur_ - at,
                      std::string(TypeName(type)) + " chunk at offset " + std::to_string(at) +
                          " continues no record; skipped"};
          consumed_ = cur_;
          return Step::kProblem;
        }
        if (assembled_.size() + len > max_record_)
          return Damage(ProblemKind::kRecordTooLarge, at, cur_,
                        "the record begun at offset " + std::to_string(consumed_) +
                            " is larger than " + std::to_string(max_record_) +
                            " bytes, the most a record may be; its chunks are dropped");
        assembled_.append(payload, len);
        if (type == kMiddle) continue;
        assembling_ = false;
        record_ = assembled_;
        record_offset_ = consumed_;
        consumed_ = cur_;
        return Step::kRecord;
    }
  }
}

FileReader::FileReader(std::string path, uint64_t offset, ScanState state, size_t chunk,
                       size_t max_record)
    : path_(std::move(path)),
      chunk_(chunk),
      max_record_(max_record),
      start_offset_(offset),
      buf_base_(std::max(offset, kFileHeaderSize)),
      scanner_({}, std::max(offset, kFileHeaderSize), state, BlockOrigin::kUnknown, max_record) {}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

void FileReader::Adopt(InputFile file) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = file.Release();
}

Status FileReader::Open() {
  if (fd_ < 0) {  // not Adopt()ed
    Result<InputFile> f = InputFile::Open(path_);
    if (!f.ok()) return status_ = f.status();
    fd_ = f->Release();
  }
  Result<uint64_t> size = FileSize(fd_, path_);
  if (!size.ok()) return status_ = size.status();
  size_ = *size;
  // More than the header: enough to name a foreign file ("version https://git-lfs" is 23
  // bytes; with only the header's 7 a Git LFS pointer was never named as one).
  char head[32];
  Result<size_t> n = ReadAt(fd_, path_, head, sizeof head, 0);
  if (!n.ok()) return status_ = n.status();
  if (Status s = CheckFileHeader(std::string_view(head, *n), &version_); !s.ok()) {
    rejected_ = true;
    problem_ = true;
    problem_storage_ = {ProblemKind::kNotWandb, 0, size_, s.message()};
    return Status::Ok();
  }
  header_pending_ = *n < kFileHeaderSize;  // a 0-byte file is normal
  // Enough of a block boundary to tell the two origins apart.
  auto boundary = [&](uint64_t at, std::string* b) {
    b->assign(std::min<uint64_t>(size_ - at, 7 + kChunkHeaderSize + 0xFFFF), '\0');
    Result<size_t> got = ReadAt(fd_, path_, b->data(), b->size(), at);
    if (!got.ok()) {
      status_ = got.status();
      return false;
    }
    b->resize(*got);
    return true;
  };
  if (size_ > kBlockSize) {
    std::string b;
    if (!boundary(kBlockSize, &b)) return status_;
    bool checked = false;
    origin_ = DetectBlockOrigin(b, size_, &checked);
    // A damaged first boundary leaves only a guess (origin 0), which reads an origin-7 file
    // 7 bytes off from there on, losing every later block: the next boundaries where one
    // candidate checks out settle it.
    for (uint64_t at = 2 * kBlockSize, tries = 0;
         origin_ == BlockOrigin::kZero && !checked && at < size_ && tries < 16;
         at += kBlockSize, ++tries) {
      if (!boundary(at, &b)) return status_;
      const BlockOrigin o = DetectBlockOrigin(b, size_ - at + kBlockSize, &checked);
      if (checked) origin_ = o;
    }
  }
  scanner_ = Scanner({}, buf_base_, scanner_.state(), origin_, max_record_);
  return status_;
}

bool FileReader::Refill(uint64_t needed) {
  if (origin_ == BlockOrigin::kUnknown) origin_ = scanner_.origin();  // a chunk settled it
  // Keep the bytes from position() on. The scanner never consumes past its window; the min
  // keeps a slip there from turning into a wild memmove.
  const uint64_t keep_from = std::min<uint64_t>(scanner_.position() - buf_base_, buf_len_);
  const size_t keep = buf_len_ - keep_from;
  if (keep_from > 0 && keep > 0) std::memmove(buf_.data(), buf_.data() + keep_from, keep);
  buf_base_ += keep_from;
  buf_len_ = keep;
  Result<uint64_t> size = FileSize(fd_, path_);
  if (!size.ok()) {
    status_ = size.status();
    return false;
  }
  const uint64_t available = *size > buf_base_ ? *size - buf_base_ : 0;
  if (needed > available || available <= buf_len_) return false;
  // Grow at least geometrically: a record larger than the window is gathered again from its
  // first chunk after each refill.
  const uint64_t want = std::min<uint64_t>(std::max<uint64_t>({needed, keep + chunk_, 2 * keep}), available);
  if (buf_.size() < want) buf_.resize(want);
  Result<size_t> n = ReadAt(fd_, path_, buf_.data() + buf_len_, want - buf_len_, buf_base_ + buf_len_);
  if (!n.ok()) {
    status_ = n.status();
    return false;
  }
  buf_len_ += *n;
  scanner_ = Scanner(std::string_view(buf_.data(), buf_len_), buf_base_, scanner_.state(), origin_,
                     max_record_);
  return true;
}

FileReader::Step FileReader::Next() {
  if (problem_) {
    problem_ = false;
    return Step::kProblem;
  }
  if (fd_ < 0 || !status_.ok() || rejected_ || header_pending_) return Step::kEnd;
  const uint64_t from = scanner_.position();
  for (;;) {
    switch (scanner_.Next()) {
      case Scanner::Step::kRecord: return Step::kRecord;
      case Scanner::Step::kProblem: return Step::kProblem;
      case Scanner::Step::kNeedMore:
        if (scanner_.position() - from >= chunk_) return Step::kYield;
        // Wanting the origin is wanting the bytes of the first block boundary: the file has
        // not reached it yet (Open decides it whenever it can).
        if (scanner_.needs_origin() && origin_ == BlockOrigin::kUnknown) return Step::kEnd;
        if (!Refill(scanner_.needed())) return Step::kEnd;
    }
  }
}

}  // namespace tw::wandb

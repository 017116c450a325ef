#include "wandb/log_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>

#include "read/bytes.h"

namespace tw::wandb {

namespace {

constexpr char kMagic[kFileHeaderSize - 1] = {':', 'W', '&', 'B', '\xE1', '\xBE'};

using read::LoadU16;
using read::LoadU32;

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

Result<read::Opening> Scanner::Open(const read::FileProbe& file, LogOptions* options) {
  read::Opening opening;
  // More than the header: enough to name a foreign file ("version https://git-lfs" is 23
  // bytes; with only the header's 7 a Git LFS pointer was never named as one).
  Result<std::string> head = file.Read(0, 32);
  if (!head.ok()) return head.status();
  if (Status s = CheckFileHeader(*head, &options->version); !s.ok()) {
    opening.reject = read::Problem{ProblemKind::kNotWandb, 0, file.size(), s.message()};
    return opening;
  }
  opening.wait = head->size() < kFileHeaderSize;  // a 0-byte file is normal
  if (file.size() <= kBlockSize || options->origin != BlockOrigin::kUnknown) return opening;
  // Enough of a block boundary to tell the two origins apart.
  auto boundary = [&](uint64_t at) {
    return file.Read(at, std::min<uint64_t>(file.size() - at, 7 + kChunkHeaderSize + 0xFFFF));
  };
  Result<std::string> b = boundary(kBlockSize);
  if (!b.ok()) return b.status();
  bool checked = false;
  options->origin = DetectBlockOrigin(*b, file.size(), &checked);
  // A damaged first boundary leaves only a guess (origin 0), which reads an origin-7 file
  // 7 bytes off from there on, losing every later block: the next boundaries where one
  // candidate checks out settle it.
  for (uint64_t at = 2 * kBlockSize, tries = 0;
       options->origin == BlockOrigin::kZero && !checked && at < file.size() && tries < 16;
       at += kBlockSize, ++tries) {
    b = boundary(at);
    if (!b.ok()) return b.status();
    const BlockOrigin o = DetectBlockOrigin(*b, file.size() - at + kBlockSize, &checked);
    if (checked) options->origin = o;
  }
  return opening;
}

}  // namespace tw::wandb

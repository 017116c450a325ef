#include "tfrecord/reader.h"

#include <algorithm>

#include "base/crc32c.h"
#include "read/bytes.h"

namespace tw::tfrecord {
namespace {

using read::LoadU32;
using read::LoadU64;

bool HeaderValid(const char* p) {
  return crc32c::Mask(crc32c::Value(p, 8)) == LoadU32(p + 8) && LoadU64(p) <= kMaxRecordLength;
}

// A TFRecord file starts with a binary length; text there means something else sits at
// the path (a Git LFS pointer, an HTML error page saved by a download script, ...).
bool LooksLikeText(std::string_view head) {
  return std::all_of(head.begin(), head.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return (u >= 0x20 && u < 0x7f) || c == '\n' || c == '\r' || c == '\t';
  });
}

}  // namespace

Scanner::Step Scanner::Fail(ProblemKind kind, uint64_t length, std::string detail) {
  problem_ = Problem{kind, base_ + pos_, length, std::move(detail)};
  return Step::kProblem;
}

Scanner::Step Scanner::Next() {
  if (state_.rejected) {
    pos_ = w_.size();
    needed_ = 0;
    return Step::kNeedMore;
  }
  if (state_.resyncing) return Resync();

  const size_t avail = w_.size() - pos_;
  if (avail < kHeaderSize) {
    needed_ = kHeaderSize;
    return Step::kNeedMore;
  }
  const char* h = w_.data() + pos_;
  const uint64_t len = LoadU64(h);
  if (crc32c::Mask(crc32c::Value(h, 8)) != LoadU32(h + 8)) {
    if (base_ + pos_ == 0 && LooksLikeText(std::string_view(h, kHeaderSize))) {
      const std::string_view head = w_.substr(0, std::min<size_t>(w_.size(), 40));
      // A short window may hold only part of the signature: a prefix of it counts.
      constexpr std::string_view kLfs = "version https://git-lfs";
      const bool lfs = head.size() >= kLfs.size() ? head.starts_with(kLfs) : kLfs.starts_with(head);
      // Said in words, never quoted: the bytes may be anyone's (a symlink to a private file),
      // and whoever can read the store must not read them there.
      std::string what =
          lfs ? "a Git LFS pointer (run `git lfs pull` where it was cloned)" : "text";
      state_.rejected = true;
      problem_ = Problem{ProblemKind::kNotTfRecord, 0, 0,
                         "not a TFRecord file: it starts with " + what + ", not a record header"};
      pos_ = w_.size();
      return Step::kProblem;
    }
    state_.resyncing = true;
    state_.resync_from = base_ + pos_;
    Step s = Fail(ProblemKind::kBadLengthCrc, 0,
                  "length CRC mismatch in the record header; the length cannot be trusted, "
                  "scanning forward for the next valid record");
    ++pos_;  // the scan starts one byte further on
    return s;
  }
  if (len > kMaxRecordLength) {
    state_.resyncing = true;
    state_.resync_from = base_ + pos_;
    Step s = Fail(ProblemKind::kImplausibleLength, 0,
                  "record length " + std::to_string(len) + " exceeds the 2 GiB limit; "
                  "scanning forward for the next valid record");
    ++pos_;
    return s;
  }
  const uint64_t total = kHeaderSize + len + kFooterSize;
  if (avail < total) {
    needed_ = total;
    return Step::kNeedMore;
  }
  const char* data = h + kHeaderSize;
  const uint32_t want = LoadU32(data + len);
  if (crc32c::Mask(crc32c::Value(data, len)) != want) {
    Step s = Fail(ProblemKind::kBadDataCrc, total,
                  "data CRC mismatch in a record of " + std::to_string(len) +
                      " bytes; record skipped");
    pos_ += total;
    return s;
  }
  record_ = std::string_view(data, len);
  record_offset_ = base_ + pos_;
  pos_ += total;
  return Step::kRecord;
}

Scanner::Step Scanner::Resync() {
  while (w_.size() - pos_ >= kHeaderSize) {
    if (HeaderValid(w_.data() + pos_)) {
      const uint64_t from = state_.resync_from;
      const uint64_t at = base_ + pos_;
      state_.resyncing = false;
      problem_ = Problem{ProblemKind::kResynced, from, at - from,
                         "skipped " + std::to_string(at - from) +
                             " damaged bytes; reading resumes at offset " + std::to_string(at)};
      return Step::kProblem;
    }
    ++pos_;
  }
  needed_ = kHeaderSize;
  return Step::kNeedMore;
}

}  // namespace tw::tfrecord

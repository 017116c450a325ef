#include "tfrecord/reader.h"

#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/crc32c.h"

namespace tw::tfrecord {
namespace {

uint64_t LoadU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts only (x86-64, arm64)
}
uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

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

const char* ProblemKindName(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::kBadLengthCrc: return "bad_length_crc";
    case ProblemKind::kImplausibleLength: return "implausible_length";
    case ProblemKind::kBadDataCrc: return "bad_data_crc";
    case ProblemKind::kResynced: return "resynced";
    case ProblemKind::kNotTfRecord: return "not_tfrecord";
  }
  return "unknown";
}

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

FileReader::FileReader(std::string path, uint64_t offset, ScanState state, size_t chunk)
    : path_(std::move(path)), chunk_(chunk), buf_base_(offset), scanner_({}, offset, state) {}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status FileReader::Open() {
  if (fd_ >= 0) return status_;  // Adopt()ed
  Result<InputFile> f = InputFile::Open(path_);
  if (!f.ok()) return status_ = f.status();
  fd_ = f->Release();
  return status_;
}

void FileReader::Adopt(InputFile file) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = file.Release();
}

bool FileReader::Refill(uint64_t needed) {
  // Keep the unconsumed bytes, drop the rest.
  const uint64_t keep_from = scanner_.position() - buf_base_;
  const size_t keep = buf_len_ - keep_from;
  if (keep_from > 0 && keep > 0) std::memmove(buf_.data(), buf_.data() + keep_from, keep);
  buf_base_ += keep_from;
  buf_len_ = keep;

  // Never size the buffer past the end of the file: a damaged or half-written header may
  // announce a record of a gigabyte that is not there (yet).
  Result<uint64_t> size = FileSize(fd_, path_);
  if (!size.ok()) {
    status_ = size.status();
    return false;
  }
  const uint64_t available = *size > buf_base_ ? *size - buf_base_ : 0;
  if (needed > available) {
    eof_ = true;
    return false;
  }
  // The first window holds enough of the file to say what it is when it is not TFRecord.
  if (buf_base_ == 0) needed = std::max<uint64_t>(needed, kSniffBytes);
  const size_t want = std::min<uint64_t>(std::max<uint64_t>(needed, keep + chunk_), available);
  if (buf_.size() < want) buf_.resize(want);
  Result<size_t> n = ReadAt(fd_, path_, buf_.data() + buf_len_, want - buf_len_, buf_base_ + buf_len_);
  if (!n.ok()) {
    status_ = n.status();
    return false;
  }
  if (buf_len_ + *n < want) eof_ = true;
  buf_len_ += *n;
  bytes_read_ += *n;
  const bool got_any = *n > 0;
  scanner_ = Scanner(std::string_view(buf_.data(), buf_len_), buf_base_, scanner_.state());
  return got_any;
}

FileReader::Step FileReader::Next() {
  if (fd_ < 0 || !status_.ok()) return Step::kEnd;
  const uint64_t from = scanner_.position();
  for (;;) {
    switch (scanner_.Next()) {
      case Scanner::Step::kRecord: return Step::kRecord;
      case Scanner::Step::kProblem: return Step::kProblem;
      case Scanner::Step::kNeedMore:
        if (scanner_.state().rejected) return Step::kEnd;
        if (eof_ && scanner_.position() + scanner_.needed() > buf_base_ + buf_len_) {
          return Step::kEnd;
        }
        if (scanner_.position() - from >= chunk_) return Step::kYield;
        if (!Refill(scanner_.needed())) return Step::kEnd;
    }
  }
}

}  // namespace tw::tfrecord

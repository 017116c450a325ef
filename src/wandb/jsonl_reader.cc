#include "wandb/jsonl_reader.h"

#include "base/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tw::wandb::jsonl {

const char* ProblemKindName(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::kLineTooLong: return "line_too_long";
  }
  return "unknown";
}

LineReader::LineReader(std::string path, uint64_t offset, ScanState state, size_t chunk)
    : path_(std::move(path)), chunk_(chunk), buf_base_(offset), pos_(offset), state_(state) {}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

Status LineReader::Open() {
  if (fd_ >= 0) return status_;  // Adopt()ed
  Result<InputFile> f = InputFile::Open(path_);
  if (!f.ok()) return status_ = f.status();
  fd_ = f->Release();
  return status_;
}

void LineReader::Adopt(InputFile file) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = file.Release();
}

bool LineReader::Fill() {
  // Keep the line in progress, drop what is consumed.
  const size_t consumed = pos_ - buf_base_;
  buf_.erase(0, consumed);
  scan_ -= consumed;
  buf_base_ = pos_;
  const size_t old = buf_.size();
  buf_.resize(old + chunk_);
  Result<size_t> n = ReadAt(fd_, path_, buf_.data() + old, chunk_, buf_base_ + old);
  if (!n.ok()) status_ = n.status();
  const size_t got = n.ok() ? *n : 0;
  buf_.resize(old + got);
  return got > 0;
}

LineReader::Step LineReader::Next() {
  if (fd_ < 0 || !status_.ok()) return Step::kEnd;
  const uint64_t from = pos_;
  for (;;) {
    if (pos_ - from >= chunk_) return Step::kYield;
    const size_t start = pos_ - buf_base_;
    const size_t nl = buf_.find('\n', std::max(scan_, start));
    if (nl != std::string::npos) {
      const bool skipped = state_.resyncing;
      state_.resyncing = false;
      line_offset_ = pos_;
      line_ = std::string_view(buf_).substr(start, nl - start);
      pos_ = buf_base_ + nl + 1;
      scan_ = nl + 1;
      if (!line_.empty() && line_.back() == '\r') line_.remove_suffix(1);
      if (skipped || line_.empty()) continue;
      return Step::kRecord;
    }
    scan_ = buf_.size();
    if (!state_.resyncing && buf_.size() - start > kMaxLine) {
      problem_ = {ProblemKind::kLineTooLong, pos_, 0,
                  "line at offset " + std::to_string(pos_) + " is longer than " +
                      std::to_string(kMaxLine >> 20) + " MiB; skipped to its end"};
      state_ = {true, pos_};
      pos_ = buf_base_ + buf_.size();  // drop what there is of it
      return Step::kProblem;
    }
    if (state_.resyncing) pos_ = buf_base_ + buf_.size();
    if (!Fill()) return Step::kEnd;
  }
}

}  // namespace tw::wandb::jsonl

// Where a reader's bytes come from: a local file's descriptor, or an object in an object store
// (objstore/object_source.h). FileReader, the source tracker's head and tail fingerprints and
// the documents read whole all read through this, so every format behaves the same whatever
// holds its bytes. One thread at a time (the writer's).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/file_io.h"
#include "base/status.h"

namespace tw::read {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // The size now: a local file may grow between two calls; an object is the version listed.
  virtual Result<uint64_t> Size() = 0;
  // Up to n bytes at `offset` into dst: fewer only where the source ends. Errors name the
  // source and the offset.
  virtual Result<size_t> ReadAt(char* dst, size_t n, uint64_t offset) = 0;
};

// A local file's descriptor (owned: closed with the source).
class FdSource final : public ByteSource {
 public:
  FdSource(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FdSource() override {
    if (fd_ >= 0) ::close(fd_);
  }
  FdSource(const FdSource&) = delete;
  FdSource& operator=(const FdSource&) = delete;
  int fd() const { return fd_; }
  Result<uint64_t> Size() override { return FileSize(fd_, path_); }
  Result<size_t> ReadAt(char* dst, size_t n, uint64_t offset) override {
    return tw::ReadAt(fd_, path_, dst, n, offset);
  }

 private:
  int fd_;
  std::string path_;
};

// Up to `n` bytes at `at` (fewer where the source ends).
inline Result<std::string> ReadString(ByteSource& src, uint64_t at, size_t n) {
  std::string out(n, '\0');
  Result<size_t> got = src.ReadAt(out.data(), n, at);
  if (!got.ok()) return got.status();
  out.resize(*got);
  return out;
}

}  // namespace tw::read

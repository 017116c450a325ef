// Helpers the fuzz targets share: the input as a file (readers take a path), and a check that
// aborts with a message, so libFuzzer keeps the input and says why.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace tw::fuzz {

// An anonymous in-memory file; path() opens it again by name (/proc/self/fd/N).
class MemFile {
 public:
  MemFile() : fd_(::memfd_create("fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }
  void Append(std::string_view bytes) {
    if (::pwrite(fd_, bytes.data(), bytes.size(), size_) != static_cast<ssize_t>(bytes.size())) std::abort();
    size_ += bytes.size();
  }

 private:
  int fd_;
  off_t size_ = 0;
};

inline void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
}

}  // namespace tw::fuzz

#include "base/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tw {

Result<uint64_t> FileSize(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return IoError(path + ": stat failed: " + std::strerror(errno));
  return static_cast<uint64_t>(st.st_size);
}

Result<size_t> ReadAt(int fd, const std::string& path, char* dst, size_t n, uint64_t offset) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, dst + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return IoError(path + ": read failed at offset " + std::to_string(offset + got) + ": " +
                     std::strerror(errno));
    }
    if (r == 0) break;  // the end of the file, for now
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace tw

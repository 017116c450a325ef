#include "base/file_io.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tw {

const char* FileTypeName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a plain file";
}

Result<InputFile> InputFile::Open(const std::string& path) {
  // O_NONBLOCK: open(2) of a FIFO with no writer otherwise waits for one, forever. It changes
  // nothing for a regular file. O_NOCTTY: a terminal device must not become ours.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + std::strerror(err));
  }
  InputFile f;
  f.fd_ = fd;
  if (::fstat(fd, &f.st_) != 0) return IoError(path + ": stat failed: " + std::strerror(errno));
  if (!S_ISREG(f.st_.st_mode))
    return InvalidArgument(path + ": is " + FileTypeName(f.st_.st_mode) +
                           ", not a regular file; it is not read");
  return f;
}

InputFile& InputFile::operator=(InputFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    st_ = o.st_;
    o.fd_ = -1;
  }
  return *this;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

InputFile InputFile::Dup() const {
  InputFile f;
  f.fd_ = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  f.st_ = st_;
  return f;
}

int InputFile::Release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

Result<std::string> InputFile::RealPath(const std::string& path) const {
  char buf[PATH_MAX + 1];
  const std::string link = "/proc/self/fd/" + std::to_string(fd_);
  const ssize_t n = ::readlink(link.c_str(), buf, PATH_MAX);
  if (n > 0 && buf[0] == '/') return std::string(buf, static_cast<size_t>(n));
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return IoError(path + ": cannot resolve its real path: " + std::strerror(errno));
  std::string out(real);
  ::free(real);
  return out;
}

std::string InputFile::Head(size_t n) const {
  std::string head(n, '\0');
  Result<size_t> got = ReadAt(fd_, "", head.data(), n, 0);
  head.resize(got.ok() ? *got : 0);
  return head;
}

bool IsWithin(const std::string& path, const std::string& dir) {
  if (dir == "/") return path.starts_with("/");
  return path == dir || (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

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

bool CanEnter(const std::string& dir) {
  // AT_EACCESS: the daemon's effective ids are what its opendir(3) is judged by.
  return ::faccessat(AT_FDCWD, dir.c_str(), R_OK | X_OK, AT_EACCESS) == 0;
}

}  // namespace tw

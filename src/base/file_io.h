// The reads every record reader makes of a file that may still be growing, with errors that
// name the file (and the offset): opening it without ever blocking, its current size, and up
// to n bytes at an offset.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace tw {

// An input file opened for reading: the one way every reader (TFRecord, .wandb, JSON lines,
// the heads that identify files) opens a path from a logdir, which anyone may write to.
// Opened with O_NONBLOCK, so that a FIFO (or a device) named like an event file cannot block
// the opening thread forever, then fstat'ed: anything but a regular file is refused before a
// byte of it is read. Owns its descriptor; move-only.
class InputFile {
 public:
  // Errors: kNotFound (the path does not exist), kInvalidArgument ("PATH: is a FIFO, not a
  // regular file"), kIo (anything else the OS said: permission denied, ...).
  static Result<InputFile> Open(const std::string& path);

  InputFile() = default;
  InputFile(InputFile&& o) noexcept : fd_(o.fd_), st_(o.st_) { o.fd_ = -1; }
  InputFile& operator=(InputFile&& o) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  int fd() const { return fd_; }
  // fstat of the opened descriptor, at Open: the identity (dev, ino) and size of what was
  // opened, whatever the path names by now.
  const struct stat& stat() const { return st_; }
  // The descriptor, for a reader to own and close.
  int Release();
  // Another descriptor of the same open file (fd -1 if dup failed: the reader then opens
  // the path itself, with the same checks).
  InputFile Dup() const;
  // Where the opened file really is (every symlink on the way resolved), from
  // /proc/self/fd: what was opened, not what the path names now, so a symlink swapped after
  // the open cannot fool a check. Falls back to realpath(path) without /proc.
  Result<std::string> RealPath(const std::string& path) const;
  // Up to `n` bytes from offset 0 (fewer if the file is shorter; none if unreadable).
  std::string Head(size_t n) const;

 private:
  int fd_ = -1;
  struct stat st_ {};
};

// "a FIFO", "a directory", "a socket", ...: what a file that is not regular is, for messages.
const char* FileTypeName(mode_t mode);

// Whether `path` (absolute, canonical) is `dir` or below it.
bool IsWithin(const std::string& path, const std::string& dir);

// "PATH: stat failed: why" on error.
Result<uint64_t> FileSize(int fd, const std::string& path);

// Up to `n` bytes at `offset` into `dst`: fewer only where the file ends (interrupted and short
// reads are retried). "PATH: read failed at offset N: why" on error.
Result<size_t> ReadAt(int fd, const std::string& path, char* dst, size_t n, uint64_t offset);

// Whether a walk can enter directory `dir` (list it and reach what is inside). Walks skip
// the directories they cannot enter (skip_permission_denied) and name them through this,
// so that no subtree of a root is left out silently.
bool CanEnter(const std::string& dir);

}  // namespace tw

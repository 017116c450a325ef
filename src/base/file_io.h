// The reads every record reader makes of a file that may still be growing, with errors that
// name the file (and the offset): its current size, and up to n bytes at an offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace tw {

// "PATH: stat failed: why" on error.
Result<uint64_t> FileSize(int fd, const std::string& path);

// Up to `n` bytes at `offset` into `dst`: fewer only where the file ends (interrupted and short
// reads are retried). "PATH: read failed at offset N: why" on error.
Result<size_t> ReadAt(int fd, const std::string& path, char* dst, size_t n, uint64_t offset);

}  // namespace tw

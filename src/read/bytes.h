// Little-endian integers at unaligned addresses, as every binary framing stores them.
// (Little-endian hosts only: x86-64, arm64.)
#pragma once

#include <cstdint>
#include <cstring>

namespace tw::read {

template <typename T>
T LoadLe(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint64_t LoadU64(const char* p) { return LoadLe<uint64_t>(p); }
inline uint32_t LoadU32(const char* p) { return LoadLe<uint32_t>(p); }
inline uint16_t LoadU16(const char* p) { return LoadLe<uint16_t>(p); }

}  // namespace tw::read

// CRC32C (Castagnoli), as TFRecord framing uses it, and TFRecord's masking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tw::crc32c {

// Extends `crc` (the CRC of earlier bytes, 0 to start) over `data`.
uint32_t Extend(uint32_t crc, const char* data, size_t n);
inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

// The same, forced onto the portable table path (tests compare the two).
uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n);
// Whether Extend uses the SSE4.2 crc32 instruction on this CPU.
bool HardwareAccelerated();

// TFRecord stores masked CRCs so that a CRC of data containing CRCs stays well behaved.
constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace tw::crc32c

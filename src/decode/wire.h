// Protobuf wire-format primitives for the hand-written decoders: read a tag, then the
// field's value, or skip it. Nothing allocates; every read is bounds-checked and a
// failure is sticky (ok() stays false), so decoders check once at the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace tw::wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class Reader {
 public:
  explicit Reader(std::string_view data) : p_(data.data()), end_(data.data() + data.size()) {}

  bool ok() const { return ok_; }
  bool done() const { return p_ >= end_ || !ok_; }

  // Reads the next field key; false at the end or on error.
  bool NextField(uint32_t* field, uint32_t* wire_type) {
    if (done()) return false;
    uint64_t key;
    if (!ReadVarint(&key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff) return Fail();
    *field = static_cast<uint32_t>(key >> 3);
    *wire_type = static_cast<uint32_t>(key & 7);
    return true;
  }

  bool ReadVarint(uint64_t* v) {
    // Fast path: a one-byte varint.
    if (p_ < end_ && static_cast<unsigned char>(*p_) < 0x80) {
      *v = static_cast<unsigned char>(*p_++);
      return true;
    }
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return Fail();
      const auto b = static_cast<unsigned char>(*p_++);
      result |= uint64_t{b & 0x7fu} << shift;
      if (b < 0x80) {
        *v = result;
        return true;
      }
    }
    return Fail();
  }
  bool ReadFixed64(uint64_t* v) { return ReadRaw(v, 8); }
  bool ReadFixed32(uint32_t* v) { return ReadRaw(v, 4); }
  bool ReadDouble(double* v) { return ReadRaw(v, 8); }
  bool ReadFloat(float* v) { return ReadRaw(v, 4); }
  bool ReadBytes(std::string_view* v) {
    uint64_t n;
    if (!ReadVarint(&n) || n > static_cast<uint64_t>(end_ - p_)) return Fail();
    *v = std::string_view(p_, n);
    p_ += n;
    return true;
  }
  bool Skip(uint32_t wire_type) {
    uint64_t scratch;
    std::string_view s;
    switch (wire_type) {
      case kVarint: return ReadVarint(&scratch);
      case kFixed64: return ReadFixed64(&scratch);
      case kLengthDelimited: return ReadBytes(&s);
      case kFixed32: {
        uint32_t f;
        return ReadFixed32(&f);
      }
      default: return Fail();  // groups (3, 4) are not used by any message we read
    }
  }
  bool Fail() {
    ok_ = false;
    p_ = end_;
    return false;
  }

 private:
  bool ReadRaw(void* out, size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return Fail();
    std::memcpy(out, p_, n);
    p_ += n;
    return true;
  }

  const char* p_;
  const char* end_;
  bool ok_ = true;
};

// Iterates a packed repeated field (or yields the single unpacked element).
template <typename Fn>
bool ForEachPackedVarint(std::string_view packed, Fn fn) {
  Reader r(packed);
  uint64_t v;
  while (!r.done()) {
    if (!r.ReadVarint(&v)) return false;
    fn(v);
  }
  return r.ok();
}

}  // namespace tw::wire

#include "tfrecord/writer.h"

#include <cstdint>
#include <cstring>

#include "base/crc32c.h"

namespace tw::tfrecord {
namespace {
void AppendFixed(std::string* out, const void* p, size_t n) {
  out->append(static_cast<const char*>(p), n);
}
}  // namespace

void AppendRecord(std::string* out, std::string_view data) {
  const uint64_t len = data.size();
  char len_bytes[8];
  std::memcpy(len_bytes, &len, 8);  // little-endian hosts
  const uint32_t len_crc = crc32c::Mask(crc32c::Value(len_bytes, 8));
  const uint32_t data_crc = crc32c::Mask(crc32c::Value(data));
  out->reserve(out->size() + data.size() + 16);
  AppendFixed(out, len_bytes, 8);
  AppendFixed(out, &len_crc, 4);
  out->append(data);
  AppendFixed(out, &data_crc, 4);
}

}  // namespace tw::tfrecord

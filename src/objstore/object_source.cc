#include "objstore/object_source.h"

#include <algorithm>
#include <cstring>

namespace tw::objstore {

namespace {
// ingest::kHeadBytes: how much of an object's start identifies it.
constexpr size_t kHeadBytes = 64;
}  // namespace

Result<size_t> ObjectSource::ReadAt(char* dst, size_t n, uint64_t offset) {
  const auto size = static_cast<uint64_t>(object_.size);
  if (changed_ || offset >= size || n == 0) return size_t{0};
  n = static_cast<size_t>(std::min<uint64_t>(n, size - offset));
  const bool cached = offset >= block_from_ && offset + n <= block_from_ + block_.size();
  if (!cached) {
    // A head (the tracker's first bytes of an object it knows) is fetched alone: the read goes
    // on from the committed offset, far from it. Anything else reads ahead.
    const bool head = offset == 0 && n <= kHeadBytes;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(
        head ? n : std::max(n, client_.settings().read_ahead_bytes), size - offset));
    Result<S3Client::Range> got = client_.Get(bucket_, object_.key, offset, want);
    ++requests_;
    if (!got.ok()) {
      if (client_.cancelled()) return size_t{0};  // stopping: the read ends, quietly, where it is
      if (got.status().code() == Code::kNotFound) {  // deleted since listed: the next listing says so
        changed_ = true;
        return size_t{0};
      }
      failed_ = true;
      return got.status();
    }
    if ((!got->etag.empty() && !object_.etag.empty() && got->etag != object_.etag) ||
        (got->total >= 0 && got->total != object_.size && got->etag.empty())) {
      changed_ = true;  // another version now: read on at the next listing
      return size_t{0};
    }
    if (got->total >= 0 && got->total != object_.size) {
      failed_ = true;
      return Corrupt("s3://" + bucket_ + "/" + object_.key + ": the answer says " +
                     std::to_string(got->total) + " bytes with ETag " + got->etag +
                     ", the listing said " + std::to_string(object_.size));
    }
    block_ = std::move(got->bytes);
    block_from_ = offset;
    if (block_.empty()) return size_t{0};
  }
  const size_t have = static_cast<size_t>(std::min<uint64_t>(n, block_from_ + block_.size() - offset));
  std::memcpy(dst, block_.data() + (offset - block_from_), have);
  return have;
}

}  // namespace tw::objstore

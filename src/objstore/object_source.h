// An object of an object store as a reader's bytes (read::ByteSource): the version the listing
// saw (its size and ETag), read by range GETs from the committed offset on, each at least
// read_ahead_bytes long so that the reader's small reads (a tail fingerprint, a record header)
// do not each become a request; the head the tracker reads first (64 bytes at 0) is fetched
// alone. A GET answered by another version (the writer
// uploaded the object again meanwhile: a TF writer re-uploads at every flush) ends the read
// there, quietly: what was read is committed, and the next listing shows the new version,
// whose bytes before the offset the tracker checks (its tail CRC) before reading on. So does
// a GET that finds the object deleted (the next listing marks it gone).
// The writer thread only.
#pragma once

#include <cstdint>
#include <string>

#include "objstore/s3_client.h"
#include "read/byte_source.h"

namespace tw::objstore {

class ObjectSource final : public read::ByteSource {
 public:
  ObjectSource(S3Client& client, std::string bucket, ObjectInfo object)
      : client_(client), bucket_(std::move(bucket)), object_(std::move(object)) {}

  Result<uint64_t> Size() override { return static_cast<uint64_t>(object_.size); }
  Result<size_t> ReadAt(char* dst, size_t n, uint64_t offset) override;

  // Whether a GET saw another version than the one listed (the read ended there).
  bool changed() const { return changed_; }
  // Whether a GET failed (after its retries): the read ended there with an error.
  bool failed() const { return failed_; }
  int64_t requests() const { return requests_; }

 private:
  S3Client& client_;
  std::string bucket_;
  ObjectInfo object_;
  std::string block_;        // the bytes of the last GET ...
  uint64_t block_from_ = 0;  // ... from this offset
  bool changed_ = false;
  bool failed_ = false;
  int64_t requests_ = 0;
};

}  // namespace tw::objstore

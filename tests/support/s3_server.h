// The vendored s3rver (third_party/s3rver, started by tests/support/s3_server.js under node) on
// 127.0.0.1 for the object-store tests: its own data directory, one bucket, and uploads and
// deletions made as a writer's SDK makes them (signed PUT and DELETE requests). Killed and
// reaped with the object.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "support/daemon_process.h"
#include "support/test_env.h"

namespace tw::testing {

class S3Server {
 public:
  // Throws std::runtime_error when node or the server cannot start.
  explicit S3Server(std::string bucket = "logs");
  ~S3Server();
  S3Server(const S3Server&) = delete;
  S3Server& operator=(const S3Server&) = delete;

  uint16_t port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& bucket() const { return bucket_; }
  // Uploads `bytes` as `key` whole (replacing what was there); false with the answer in
  // `*why` when the server refuses.
  bool Put(const std::string& key, const std::string& bytes, std::string* why = nullptr);
  bool Delete(const std::string& key);

 private:
  std::string bucket_;
  TempDir dir_;
  ChildProcess child_;
  uint16_t port_ = 0;
};

// Whether node can run the vendored server here (the tests that need it skip otherwise).
bool NodeAvailable();

}  // namespace tw::testing

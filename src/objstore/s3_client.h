// An S3 (or S3-compatible: MinIO, Ceph, R2, GCS interoperability) client with just what
// tailing a logdir needs: list a prefix (ListObjectsV2, every page) and read a byte range of an
// object. Requests are signed with SigV4 (sigv4.h); 500/502/503/504 (SlowDown) answers and
// dropped connections are retried with exponential backoff; every answer is checked as hostile
// (bad XML, lengths over limits, a Content-Range that disagrees with the request, redirects),
// and errors name the object (s3://bucket/key) and what was wrong, never a secret.
// Each call is independent; the client is used by one thread at a time (its credential
// chain is not locked): the lister and the writer each hold their own.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "objstore/credentials.h"

namespace tw::objstore {

struct S3Settings {
  // "https://s3.REGION.amazonaws.com" when empty; "http://127.0.0.1:9000" for a local server.
  std::string endpoint;
  std::string region = "us-east-1";
  // Path-style URLs (ENDPOINT/BUCKET/KEY): MinIO and most local servers; virtual-hosted
  // (BUCKET.HOST/KEY) otherwise.
  bool path_style = false;
  double timeout_seconds = 30;
  int max_attempts = 5;           // per request, the first included
  double backoff_seconds = 0.2;   // before the first retry; doubled at each
  size_t read_ahead_bytes = 1 << 20;  // the least one range GET asks for
  size_t max_objects = 100000;    // a listing longer than this is cut (and said so)
  CredentialSettings credentials;
  bool operator==(const S3Settings&) const = default;
};

// "s3://bucket/prefix" split; the prefix without its leading '/', with a trailing '/' added
// when not empty. Errors say what is wrong with the URL.
struct S3Location {
  std::string bucket, prefix;
  std::string Url(const std::string& key) const { return "s3://" + bucket + "/" + key; }
};
Result<S3Location> ParseS3Url(const std::string& url);
bool IsS3Url(const std::string& path);

struct ObjectInfo {
  std::string key;
  int64_t size = 0;
  std::string etag;     // as the server gives it, quotes removed
  double mtime = 0;     // LastModified, Unix seconds (0 when unreadable)
  bool operator==(const ObjectInfo&) const = default;
};

// A ListObjectsV2 answer's objects, continuation token and truncation flag; errors say what
// in the XML is wrong (exposed for tests of hostile answers).
struct ListPage {
  std::vector<ObjectInfo> objects;
  bool truncated = false;
  std::string next_token;
};
Result<ListPage> ParseListPage(std::string_view xml);

class S3Client {
 public:
  S3Client(S3Settings settings, Getenv env = ProcessEnvironment());

  // Every object under `loc` (all pages, up to max_objects). Keys no path can hold (empty
  // segments, "." or "..", control characters) are left out and named in `skipped`.
  struct Listing {
    std::vector<ObjectInfo> objects;
    std::vector<std::string> skipped;  // "KEY: why"
    bool cut = false;                  // more than max_objects: the rest were not listed
  };
  Result<Listing> List(const S3Location& loc);
  // Up to `n` bytes of `key` from `from`: what came, the object's total size and ETag as this
  // answer says. A range past the end gives no bytes (the object shrank).
  struct Range {
    std::string bytes;
    int64_t total = -1;
    std::string etag;
  };
  Result<Range> Get(const std::string& bucket, const std::string& key, uint64_t from, size_t n);

  const S3Settings& settings() const { return settings_; }
  // For tests: what to do instead of sleeping between retries.
  void SetSleep(std::function<void(double)> sleep) { sleep_ = std::move(sleep); }
  // Set by another thread: requests in flight and waits between retries end within about
  // 100 ms, with an error. Null: never. Set before use; it must outlive the client.
  void SetCancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }
  bool cancelled() const { return cancel_ && cancel_->load(); }

 private:
  struct Answer;
  // Signs and sends, retrying what can be retried; `what` names the object for messages.
  Result<Answer> Send(const std::string& bucket, const std::string& key,
                      std::vector<std::pair<std::string, std::string>> query,
                      std::vector<std::pair<std::string, std::string>> headers, size_t max_body,
                      const std::string& what);
  S3Settings settings_;
  CredentialChain credentials_;
  std::function<void(double)> sleep_;
  const std::atomic<bool>* cancel_ = nullptr;
  std::string scheme_, host_;  // of the endpoint
};

}  // namespace tw::objstore

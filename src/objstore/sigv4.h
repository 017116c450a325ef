// AWS Signature Version 4 for S3 requests, on OpenSSL (HMAC-SHA256). Written here rather than
// through libcurl's CURLOPT_AWS_SIGV4 because curl 7.88 signs the query string as given
// (unsorted, unnormalized: curl/curl#9717), which breaks ListObjectsV2's continuation tokens;
// and because a pure function is tested against AWS's published examples without a network.
// Pure; any thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tw::objstore {

struct Credentials {
  std::string access_key_id, secret_access_key, session_token;  // token: temporary ones only
  bool empty() const { return access_key_id.empty(); }
};

struct SignInput {
  std::string method;          // "GET"
  std::string host;            // the Host header as sent: "bucket.s3.amazonaws.com", "127.0.0.1:9000"
  std::string path;            // already URI-encoded, as sent: "/bucket/key%20name"
  std::vector<std::pair<std::string, std::string>> query;  // decoded names and values
  std::vector<std::pair<std::string, std::string>> headers;  // signed besides host (names any case)
  std::string payload_sha256;  // hex; the empty body's for GETs
  std::string amz_date;        // "20130524T000000Z"
  std::string region;          // "us-east-1"
  std::string service = "s3";
};

// The value of the Authorization header. The caller sends x-amz-date, x-amz-content-sha256
// (and x-amz-security-token with temporary credentials): pass them in `headers` too.
std::string SignV4(const SignInput& in, const Credentials& creds);

// The canonical request (exposed for tests and for a clear diagnosis of a mismatch).
std::string CanonicalRequest(const SignInput& in);

// RFC 3986 unreserved characters kept, everything else %XX (upper case); '/' kept when
// `keep_slash` (object keys in paths).
std::string UriEncode(std::string_view s, bool keep_slash);
// The canonical query string: names and values encoded, sorted by name then value.
std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> query);
std::string Sha256Hex(std::string_view data);
// "20130524T000000Z" of a Unix time.
std::string AmzDate(long long unix_seconds);

}  // namespace tw::objstore

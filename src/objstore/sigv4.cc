#include "objstore/sigv4.h"

#include "base/strings.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <ctime>

namespace tw::objstore {

namespace {

std::string Hex(const unsigned char* p, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out;
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Header values are trimmed and inner runs of spaces folded to one (the spec's Trimall).
std::string TrimAll(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> SignedHeaders(const SignInput& in) {
  std::vector<std::pair<std::string, std::string>> h;
  h.emplace_back("host", TrimAll(in.host));
  for (const auto& [k, v] : in.headers) h.emplace_back(Lower(k), TrimAll(v));
  std::sort(h.begin(), h.end());
  return h;
}

std::string SignedHeaderNames(const std::vector<std::pair<std::string, std::string>>& h) {
  std::string names;
  for (const auto& [k, v] : h) names += (names.empty() ? "" : ";") + k;
  return names;
}

}  // namespace

std::string UriEncode(std::string_view s, bool keep_slash) { return PercentEncode(s, keep_slash); }

std::string CanonicalQuery(std::vector<std::pair<std::string, std::string>> query) {
  for (auto& [k, v] : query) {
    k = UriEncode(k, false);
    v = UriEncode(v, false);
  }
  std::sort(query.begin(), query.end());
  std::string out;
  for (const auto& [k, v] : query) out += (out.empty() ? "" : "&") + k + "=" + v;
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  return Hex(md, sizeof md);
}

std::string AmzDate(long long unix_seconds) {
  const time_t t = static_cast<time_t>(unix_seconds);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string CanonicalRequest(const SignInput& in) {
  const auto headers = SignedHeaders(in);
  std::string out = in.method + "\n" + (in.path.empty() ? "/" : in.path) + "\n" +
                    CanonicalQuery(in.query) + "\n";
  for (const auto& [k, v] : headers) out += k + ":" + v + "\n";
  out += "\n" + SignedHeaderNames(headers) + "\n" + in.payload_sha256;
  return out;
}

std::string SignV4(const SignInput& in, const Credentials& creds) {
  const std::string day = in.amz_date.substr(0, 8);
  const std::string scope = day + "/" + in.region + "/" + in.service + "/aws4_request";
  const std::string to_sign = "AWS4-HMAC-SHA256\n" + in.amz_date + "\n" + scope + "\n" +
                              Sha256Hex(CanonicalRequest(in));
  std::string key = Hmac("AWS4" + creds.secret_access_key, day);
  key = Hmac(key, in.region);
  key = Hmac(key, in.service);
  key = Hmac(key, "aws4_request");
  const std::string sig = Hmac(key, to_sign);
  return "AWS4-HMAC-SHA256 Credential=" + creds.access_key_id + "/" + scope +
         ",SignedHeaders=" + SignedHeaderNames(SignedHeaders(in)) +
         ",Signature=" + Hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());
}

}  // namespace tw::objstore

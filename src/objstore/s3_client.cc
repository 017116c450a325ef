#include "objstore/s3_client.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "objstore/http.h"
#include "objstore/sigv4.h"

namespace tw::objstore {

namespace {

// What an answer may hold beyond the bytes asked for: an error document (a 416's, a 403's).
constexpr size_t kErrorRoom = 64 << 10;

const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// XML text with the five named entities and numeric references decoded; false on any other.
bool DecodeXmlText(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '&') {
      *out += in[i];
      continue;
    }
    const size_t semi = in.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) return false;
    const std::string_view e = in.substr(i + 1, semi - i - 1);
    if (e == "amp") *out += '&';
    else if (e == "lt") *out += '<';
    else if (e == "gt") *out += '>';
    else if (e == "quot") *out += '"';
    else if (e == "apos") *out += '\'';
    else if (e.size() > 1 && e[0] == '#') {
      const bool hex = e[1] == 'x';
      unsigned long cp = 0;
      for (char c : e.substr(hex ? 2 : 1)) {
        const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                      : hex && std::isxdigit(static_cast<unsigned char>(c))
                          ? (std::tolower(static_cast<unsigned char>(c)) - 'a' + 10)
                          : -1;
        if (d < 0 || cp > 0x10FFFF) return false;
        cp = cp * (hex ? 16 : 10) + static_cast<unsigned long>(d);
      }
      if (cp == 0 || cp > 0x10FFFF) return false;
      if (cp < 0x80) *out += static_cast<char>(cp);
      else if (cp < 0x800) {
        *out += static_cast<char>(0xC0 | (cp >> 6));
        *out += static_cast<char>(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        *out += static_cast<char>(0xE0 | (cp >> 12));
        *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *out += static_cast<char>(0x80 | (cp & 0x3F));
      } else {
        *out += static_cast<char>(0xF0 | (cp >> 18));
        *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        *out += static_cast<char>(0x80 | (cp & 0x3F));
      }
    } else {
      return false;
    }
    i = semi;
  }
  return true;
}

// The first <tag>text</tag> in `xml` (none: nullopt); an element opened and never closed,
// or text that does not decode, is an error.
Result<std::optional<std::string>> Element(std::string_view xml, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const size_t b = xml.find(open);
  if (b == std::string_view::npos) {
    if (xml.find("<" + tag + "/>") != std::string_view::npos) return std::optional<std::string>("");
    return std::optional<std::string>();
  }
  const size_t e = xml.find(close, b + open.size());
  if (e == std::string_view::npos) return Corrupt("<" + tag + "> is never closed");
  std::string text;
  if (!DecodeXmlText(xml.substr(b + open.size(), e - b - open.size()), &text))
    return Corrupt("<" + tag + "> holds an entity that is not XML");
  return std::optional<std::string>(std::move(text));
}

std::string StripQuotes(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

// "2009-10-12T17:50:30.000Z" as Unix seconds; 0 when not of that form.
double ParseIsoTime(const std::string& s) {
  struct tm tm {};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end) return 0;
  double frac = 0;
  if (*end == '.') frac = std::atof(end);
  return static_cast<double>(timegm(&tm)) + frac;
}

// What an error answer says, bounded and printable: "HTTP 403 InvalidAccessKeyId: ...".
std::string Describe(long status, const std::string& body) {
  std::string out = "HTTP " + std::to_string(status);
  auto code = Element(body, "Code");
  auto message = Element(body, "Message");
  auto clean = [](std::string s) {
    if (s.size() > 200) s = s.substr(0, 200) + "...";
    for (char& c : s)
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    return s;
  };
  if (code.ok() && *code) out += " " + clean(**code);
  if (message.ok() && *message) out += ": " + clean(**message);
  return out;
}

// Why a key cannot be a path under the root, or "" when it can.
std::string OddKey(const std::string& key) {
  if (key.empty() || key.front() == '/' || key.back() == '/') return "an empty path segment";
  for (unsigned char c : key)
    if (c < 0x20 || c == 0x7F) return "a control character";
  size_t from = 0;
  for (;;) {
    const size_t slash = key.find('/', from);
    const std::string seg = key.substr(from, slash == std::string::npos ? std::string::npos : slash - from);
    if (seg.empty()) return "an empty path segment";
    if (seg == "." || seg == "..") return "a '" + seg + "' segment";
    if (slash == std::string::npos) return "";
    from = slash + 1;
  }
}

}  // namespace

bool IsS3Url(const std::string& path) { return path.rfind("s3://", 0) == 0; }

Result<S3Location> ParseS3Url(const std::string& url) {
  if (!IsS3Url(url)) return InvalidArgument("'" + url + "' is not an s3:// URL");
  const std::string rest = url.substr(5);
  const size_t slash = rest.find('/');
  S3Location loc;
  loc.bucket = rest.substr(0, slash);
  if (loc.bucket.size() < 3 || loc.bucket.size() > 63)
    return InvalidArgument("'" + url + "': a bucket name has 3 to 63 characters");
  for (char c : loc.bucket)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
          c == '-' || c == '.'))
      return InvalidArgument("'" + url + "': a bucket name has only lower-case letters, digits, '-' and '.'");
  if (slash != std::string::npos) loc.prefix = rest.substr(slash + 1);
  while (!loc.prefix.empty() && loc.prefix.back() == '/') loc.prefix.pop_back();
  if (!loc.prefix.empty()) {
    if (const std::string why = OddKey(loc.prefix); !why.empty())
      return InvalidArgument("'" + url + "': the prefix has " + why);
    loc.prefix += '/';
  }
  return loc;
}

Result<ListPage> ParseListPage(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos)
    return Corrupt("not a ListBucketResult document");
  ListPage page;
  size_t at = 0;
  for (;;) {
    const size_t b = xml.find("<Contents>", at);
    if (b == std::string_view::npos) break;
    const size_t e = xml.find("</Contents>", b);
    if (e == std::string_view::npos) return Corrupt("a <Contents> is never closed");
    const std::string_view item = xml.substr(b, e - b);
    at = e + 11;
    auto key = Element(item, "Key");
    auto size = Element(item, "Size");
    auto etag = Element(item, "ETag");
    auto modified = Element(item, "LastModified");
    for (auto* r : {&key, &size, &etag, &modified})
      if (!r->ok()) return r->status();
    if (!*key || (*key)->empty()) return Corrupt("a <Contents> without a <Key>");
    ObjectInfo o;
    o.key = **key;
    if (!*size || (*size)->empty() || (*size)->size() > 18 ||
        !std::all_of((*size)->begin(), (*size)->end(), [](char c) { return c >= '0' && c <= '9'; }))
      return Corrupt("object " + o.key + ": <Size> is not a byte count");
    o.size = std::stoll(**size);
    o.etag = *etag ? StripQuotes(**etag) : "";
    o.mtime = *modified ? ParseIsoTime(**modified) : 0;
    page.objects.push_back(std::move(o));
  }
  auto truncated = Element(xml, "IsTruncated");
  if (!truncated.ok()) return truncated.status();
  page.truncated = *truncated && **truncated == "true";
  if (page.truncated) {
    auto token = Element(xml, "NextContinuationToken");
    if (!token.ok()) return token.status();
    if (!*token || (*token)->empty())
      return Corrupt("<IsTruncated> is true but there is no <NextContinuationToken>");
    page.next_token = **token;
  }
  return page;
}

struct S3Client::Answer {
  long status = 0;
  HttpResponse response;
};

S3Client::S3Client(S3Settings settings, Getenv env)
    : settings_(std::move(settings)), credentials_(settings_.credentials, std::move(env)) {
  std::string endpoint = settings_.endpoint.empty()
                             ? "https://s3." + settings_.region + ".amazonaws.com"
                             : settings_.endpoint;
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  const size_t sep = endpoint.find("://");
  scheme_ = sep == std::string::npos ? "https" : endpoint.substr(0, sep);
  host_ = sep == std::string::npos ? endpoint : endpoint.substr(sep + 3);
  // In short slices, so that a cancel is seen soon.
  sleep_ = [this](double s) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
    while (std::chrono::steady_clock::now() < until && !(cancel_ && cancel_->load()))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
}

Result<S3Client::Answer> S3Client::Send(const std::string& bucket, const std::string& key,
                                        std::vector<std::pair<std::string, std::string>> query,
                                        std::vector<std::pair<std::string, std::string>> headers,
                                        size_t max_body, const std::string& what) {
  std::string last;
  int attempt = 1;
  for (; attempt <= std::max(1, settings_.max_attempts); ++attempt) {
    if (attempt > 1) sleep_(std::min(10.0, settings_.backoff_seconds * std::pow(2.0, attempt - 2)));
    if (cancel_ && cancel_->load()) return IoError(what + ": abandoned (stopping)");
    Result<Credentials> creds = credentials_.Get();
    if (!creds.ok()) return Status(creds.status().code(), what + ": " + creds.status().message());
    SignInput in;
    in.method = "GET";
    in.host = settings_.path_style ? host_ : bucket + "." + host_;
    in.path = settings_.path_style ? "/" + bucket + (key.empty() ? "" : "/" + UriEncode(key, true))
                                   : "/" + UriEncode(key, true);
    in.query = query;
    in.headers = headers;
    in.amz_date = AmzDate(std::time(nullptr));
    in.payload_sha256 = kEmptySha256;
    in.region = settings_.region;
    in.headers.emplace_back("x-amz-date", in.amz_date);
    in.headers.emplace_back("x-amz-content-sha256", kEmptySha256);
    if (!creds->session_token.empty()) in.headers.emplace_back("x-amz-security-token", creds->session_token);
    HttpRequest req;
    req.url = scheme_ + "://" + in.host + in.path;
    const std::string q = CanonicalQuery(query);
    if (!q.empty()) req.url += "?" + q;
    for (const auto& [k, v] : in.headers) req.headers.push_back(k + ": " + v);
    req.headers.push_back("Authorization: " + SignV4(in, *creds));
    req.timeout_seconds = settings_.timeout_seconds;
    req.max_body = max_body;
    req.cancel = cancel_;
    Result<HttpResponse> r = Exchange(req);
    if (!r.ok()) {
      last = r.status().message();
      if (last.find("longer than") != std::string::npos) return IoError(what + ": " + last);  // not better next time
      continue;
    }
    if (r->status == 500 || r->status == 502 || r->status == 503 || r->status == 504) {
      last = Describe(r->status, r->body);
      continue;
    }
    if (r->status == 403) credentials_.Forget();  // rotated keys are looked up again next time
    return Answer{r->status, std::move(*r)};
  }
  return IoError(what + ": gave up after " + std::to_string(attempt - 1) + " attempts; the last: " + last);
}

namespace {

// An answer that is not the one asked for, in words naming `what`.
Status Unexpected(const std::string& what, long status, const HttpResponse& r) {
  if (status >= 300 && status < 400) {
    const std::string region = r.Header("x-amz-bucket-region");
    return InvalidArgument(what + ": redirected (HTTP " + std::to_string(status) + ")" +
                           (region.empty() ? "" : " to region " + region) +
                           "; not followed: set [s3] region and endpoint to the bucket's");
  }
  if (status == 403) return Status(Code::kInvalidArgument, what + ": access denied (" + Describe(status, r.body) + ")");
  if (status == 404) return NotFound(what + ": not found (" + Describe(status, r.body) + ")");
  return IoError(what + ": " + Describe(status, r.body));
}

}  // namespace

Result<S3Client::Listing> S3Client::List(const S3Location& loc) {
  Listing out;
  std::string token;
  const std::string what = "s3://" + loc.bucket + "/" + loc.prefix;
  for (int page = 0;; ++page) {
    std::vector<std::pair<std::string, std::string>> query = {{"list-type", "2"}, {"prefix", loc.prefix}};
    if (!token.empty()) query.emplace_back("continuation-token", token);
    Result<Answer> a = Send(loc.bucket, "", query, {}, 16 << 20, "listing " + what);
    if (!a.ok()) return a.status();
    if (a->status != 200) return Unexpected("listing " + what, a->status, a->response);
    Result<ListPage> parsed = ParseListPage(a->response.body);
    if (!parsed.ok())
      return Corrupt("listing " + what + ": the answer is not a listing: " + parsed.status().message());
    for (auto& o : parsed->objects) {
      if (o.key.rfind(loc.prefix, 0) != 0) {
        out.skipped.push_back(o.key + ": outside the prefix asked for");
        continue;
      }
      if (const std::string why = OddKey(o.key); !why.empty()) {
        out.skipped.push_back(o.key + ": " + why);
        continue;
      }
      if (out.objects.size() >= settings_.max_objects) {
        out.cut = true;
        return out;
      }
      out.objects.push_back(std::move(o));
    }
    if (!parsed->truncated) break;
    if (parsed->next_token == token)
      return Corrupt("listing " + what + ": the server gave the same continuation token twice");
    token = parsed->next_token;
  }
  return out;
}

Result<S3Client::Range> S3Client::Get(const std::string& bucket, const std::string& key,
                                      uint64_t from, size_t n) {
  const std::string what = "s3://" + bucket + "/" + key;
  Range out;
  if (n == 0) return out;
  const uint64_t last = from + n - 1;
  Result<Answer> a = Send(bucket, key, {},
                          {{"range", "bytes=" + std::to_string(from) + "-" + std::to_string(last)}},
                          n + kErrorRoom, what);
  if (!a.ok()) return a.status();
  const HttpResponse& r = a->response;
  out.etag = StripQuotes(r.Header("etag"));
  if (a->status == 416) {  // the range starts past the end: the object shrank
    const std::string cr = r.Header("content-range");
    const size_t slash = cr.find('/');
    if (slash != std::string::npos) out.total = std::atoll(cr.c_str() + slash + 1);
    return out;
  }
  if (a->status == 200) {
    // The whole object (a server that ignores ranges): usable only from its start.
    if (from != 0)
      return Corrupt(what + ": asked for bytes " + std::to_string(from) + "-" + std::to_string(last) +
                     ", the server sent the whole object");
    out.total = static_cast<int64_t>(r.body.size());
    out.bytes = r.body.substr(0, n);
    return out;
  }
  if (a->status != 206) return Unexpected(what, a->status, r);
  // "bytes FIRST-LAST/TOTAL" must be the range asked for (or its part before the end).
  const std::string cr = r.Header("content-range");
  unsigned long long first = 0, end = 0, total = 0;
  char star = 0;
  if (std::sscanf(cr.c_str(), "bytes %llu-%llu/%llu", &first, &end, &total) != 3) {
    if (std::sscanf(cr.c_str(), "bytes %llu-%llu/%c", &first, &end, &star) != 3 || star != '*')
      return Corrupt(what + ": a partial answer without a usable Content-Range ('" + cr.substr(0, 80) + "')");
    total = 0;
  }
  if (first != from || end < first || end > last || (star == 0 && end >= total))
    return Corrupt(what + ": asked for bytes " + std::to_string(from) + "-" + std::to_string(last) +
                   ", the answer says '" + cr.substr(0, 80) + "'");
  if (r.body.size() != end - first + 1)
    return Corrupt(what + ": Content-Range '" + cr.substr(0, 80) + "' announces " +
                   std::to_string(end - first + 1) + " bytes, " + std::to_string(r.body.size()) + " came");
  out.total = star ? -1 : static_cast<int64_t>(total);
  out.bytes = r.body;
  return out;
}

}  // namespace tw::objstore

#include "notify/http_client.h"

#include <algorithm>
#include <cctype>

#include "notify/secrets.h"

namespace tw::notify {
namespace {

bool IEquals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// What one post gathers from curl's callbacks.
struct Exchange {
  size_t max_body = 0;
  HttpResponse response;
  std::string status_line;  // the latest answer's ("HTTP/1.1 407 Proxy Authentication Required")
  bool cut = false;         // the body reached max_body
};

// Every answer's header lines come here: a proxy's to CONNECT, a 100 Continue, then the final
// answer's. Each status line starts the collection afresh, so only the final answer's remain.
size_t OnHeader(char* data, size_t size, size_t n, void* p) {
  auto* ex = static_cast<Exchange*>(p);
  const std::string_view line = Trim(std::string_view(data, size * n));
  if (line.starts_with("HTTP/")) {
    ex->response.headers.clear();
    ex->status_line = std::string(line);
  } else if (const size_t colon = line.find(':'); colon != std::string_view::npos && colon > 0) {
    ex->response.headers.emplace_back(std::string(line.substr(0, colon)), std::string(Trim(line.substr(colon + 1))));
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* p) {
  auto* ex = static_cast<Exchange*>(p);
  const size_t room = ex->max_body - ex->response.body.size();
  if (size * n > room) {
    ex->response.body.append(data, room);
    ex->cut = true;
    return 0;  // ends the transfer (CURLE_WRITE_ERROR): the status and headers are what matter
  }
  ex->response.body.append(data, size * n);
  return size * n;
}

Status CheckHeaders(const Headers& headers) {
  for (const auto& [name, value] : headers) {
    // CR or LF would end the header early and let the rest forge headers or a body.
    auto bad = [](char c) { return c == '\r' || c == '\n' || c == '\0'; };
    if (name.empty() || std::any_of(name.begin(), name.end(), bad) || std::any_of(value.begin(), value.end(), bad))
      return InvalidArgument("HTTP header \"" + name.substr(0, name.find_first_of("\r\n")) +
                             "\" has an empty name or a CR, LF or NUL");  // the value may be secret
  }
  return Status::Ok();
}

std::vector<std::string> HeaderLines(const Headers& headers) {
  std::vector<std::string> lines;
  bool content_type = false;
  for (const auto& [name, value] : headers) {
    content_type = content_type || IEquals(name, "content-type");
    // "Name;" is how curl sends an empty value ("Name:" would remove the header).
    lines.push_back(value.empty() ? name + ";" : name + ": " + value);
  }
  // Without one given, none at all (not curl's application/x-www-form-urlencoded).
  if (!content_type) lines.emplace_back("Content-Type:");
  // No wait for "100 Continue" before a larger body: receivers read the whole POST anyway.
  lines.emplace_back("Expect:");
  return lines;
}

// Where a failed post was, for its message.
std::string Step(CURL* h, CURLcode rc, const Url& url, const std::optional<Proxy>& proxy, size_t body_size) {
  const bool https = url.scheme == "https";
  std::string phase = curl::Phase(h, rc, https, proxy);
  if (phase == "TLS handshake" && rc == CURLE_OPERATION_TIMEDOUT && proxy && proxy->scheme == "http") {
    long connect_code = 0;  // no answer to CONNECT yet: the tunnel was still being opened
    curl_easy_getinfo(h, CURLINFO_HTTP_CONNECTCODE, &connect_code);
    if (connect_code == 0) phase = "proxy CONNECT";
  }
  if (!phase.empty()) return phase;
  if (rc == CURLE_SEND_ERROR) return "write";
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    curl_off_t sent = 0;
    curl_easy_getinfo(h, CURLINFO_SIZE_UPLOAD_T, &sent);
    if (static_cast<size_t>(sent) < body_size) return "write";
  }
  return "read";
}

// "HTTP/1.1 407 Proxy Authentication Required" -> "407 Proxy Authentication Required".
std::string AfterVersion(const std::string& status_line) {
  const size_t space = status_line.find(' ');
  return space == std::string::npos ? status_line : status_line.substr(space + 1);
}

}  // namespace

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (IEquals(n, name)) return v;
  }
  return "";
}

HttpClient::HttpClient() : easy_(curl::NewEasy()) {}

Result<HttpResponse> HttpClient::Post(const Url& url, const Headers& headers, std::string_view body,
                                      const HttpOptions& options) {
  TW_RETURN_IF_ERROR(CheckHeaders(headers));
  const std::string full = JoinUrl(url);
  const std::string where = RedactUrl(full);
  std::optional<Proxy> proxy;
  if (const std::string p = options.proxy ? *options.proxy : ProxyFromEnvironment(url); !p.empty()) {
    Result<Proxy> parsed = ParseProxy(p);
    if (!parsed.ok()) return IoError(where + ": proxy: " + parsed.status().message());
    proxy = *parsed;
  }
  if (!easy_) return IoError(where + ": libcurl cannot make a handle");
  CURL* h = easy_.get();
  curl_easy_reset(h);  // the options only: open connections, TLS sessions and the DNS cache stay
  char errbuf[CURL_ERROR_SIZE];
  curl::SetCommon(h, "http,https", errbuf, options.timeout_seconds);
  if (url.scheme == "https") {
    // Before any traffic: a CA file that cannot be read is a configuration error.
    if (Status s = curl::SetTls(h, options.ca_file); !s.ok()) return IoError(where + ": TLS handshake: " + s.message());
  }
  curl::SetProxy(h, proxy, /*tunnel=*/false);
  const curl::Slist header_list = curl::MakeList(HeaderLines(headers));
  Exchange ex;
  ex.max_body = options.max_body_bytes;
  curl_easy_setopt(h, CURLOPT_URL, full.c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  // Never null: with no POSTFIELDS, curl would read the body from stdin.
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.empty() ? "" : body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(h, CURLOPT_USERAGENT, options.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &ex);
  const CURLcode rc = curl_easy_perform(h);

  if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && ex.cut)) {
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    ex.response.status = static_cast<int>(status);
    return std::move(ex.response);
  }
  std::string step, what;
  if (curl::RefusedConnect(h) != 0) {
    step = "proxy CONNECT";
    what = "the proxy answered " + AfterVersion(ex.status_line);
  } else {
    step = Step(h, rc, url, proxy, body.size());
    what = curl::Describe(rc, errbuf, options.timeout_seconds);
  }
  // curl's words name hosts, not paths; but nothing of the URL's secret part or the proxy's
  // credentials may get out, whatever a future curl says.
  std::vector<std::string> secrets = proxy ? proxy->Secrets() : std::vector<std::string>{};
  secrets.push_back(full);
  if (url.target.size() > 1) secrets.push_back(url.target);
  std::sort(secrets.begin(), secrets.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return IoError(where + ": " + step + ": " + ScrubSecrets(what, secrets));
}

Result<HttpResponse> HttpPost(const Url& url, const Headers& headers, std::string_view body,
                              const HttpOptions& options) {
  thread_local HttpClient client;
  return client.Post(url, headers, body, options);
}

}  // namespace tw::notify

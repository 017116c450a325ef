#include "objstore/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <mutex>

namespace tw::objstore {

namespace {

struct Sink {
  HttpResponse* response;
  size_t max_body;
  bool over = false;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t len = size * n;
  if (sink->response->body.size() + len > sink->max_body) {
    sink->over = true;
    return 0;  // curl fails the transfer (CURLE_WRITE_ERROR)
  }
  sink->response->body.append(data, len);
  return len;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* response = static_cast<HttpResponse*>(user);
  const size_t len = size * n;
  std::string line(data, len);
  if (line.rfind("HTTP/", 0) == 0) response->headers.clear();  // a new response (100 Continue)
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    const size_t b = value.find_first_not_of(" \t");
    const size_t e = value.find_last_not_of(" \t\r\n");
    value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
    response->headers.emplace_back(std::move(name), std::move(value));
  }
  return len;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancel = static_cast<const std::atomic<bool>*>(user);
  return cancel && cancel->load() ? 1 : 0;  // non-zero: CURLE_ABORTED_BY_CALLBACK
}

}  // namespace

std::string HttpResponse::Header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return "";
}

Result<HttpResponse> Exchange(const HttpRequest& request) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), curl_easy_cleanup);
  if (!h) return IoError(request.url + ": cannot start a transfer (out of memory)");
  curl_slist* list = nullptr;
  for (const auto& line : request.headers) list = curl_slist_append(list, line.c_str());
  // curl adds "Expect: 100-continue" to PUTs with a body, and an Accept: neither is signed.
  list = curl_slist_append(list, "Expect:");
  list = curl_slist_append(list, "Accept:");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(list, curl_slist_free_all);
  HttpResponse response;
  Sink sink{&response, request.max_body};
  char errbuf[CURL_ERROR_SIZE] = "";
  CURL* c = h.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  const long ms = std::max(1L, std::lround(request.timeout_seconds * 1000));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
  curl_easy_setopt(c, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &response);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(request.max_body));
  if (request.cancel) {
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnProgress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(request.cancel));
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  }
  if (request.method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  const CURLcode rc = curl_easy_perform(c);
  if (sink.over || rc == CURLE_FILESIZE_EXCEEDED)
    return IoError(request.url + ": the answer is longer than " + std::to_string(request.max_body) +
                   " bytes; not read");
  if (rc == CURLE_ABORTED_BY_CALLBACK) return IoError(request.url + ": abandoned (stopping)");
  if (rc != CURLE_OK)
    return IoError(request.url + ": " + (errbuf[0] ? std::string(errbuf) : curl_easy_strerror(rc)));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  return response;
}

}  // namespace tw::objstore

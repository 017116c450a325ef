#include "notify/curl_setup.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "notify/render.h"

namespace tw::notify::curl {

Easy NewEasy() {
  static std::once_flag once;
  // curl_global_init sets up OpenSSL and the resolver; curl_global_cleanup is never called,
  // as handles may live in thread_local storage until the process ends.
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return Easy(curl_easy_init());
}

Slist MakeList(const std::vector<std::string>& lines) {
  curl_slist* list = nullptr;
  for (const std::string& line : lines) {
    curl_slist* next = curl_slist_append(list, line.c_str());
    if (!next) break;  // out of memory: the transfer goes without the rest, and fails on its own
    list = next;
  }
  return Slist(list);
}

void SetCommon(CURL* h, const char* protocols, char* errbuf, double seconds) {
  errbuf[0] = '\0';
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, protocols);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  const long ms = std::max(1L, std::lround(seconds * 1000));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
}

Status SetTls(CURL* h, const std::string& ca_file) {
  curl_easy_setopt(h, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
  if (ca_file.empty()) return Status::Ok();
  // Checked here so that a missing file is named as such, before any traffic.
  if (::access(ca_file.c_str(), R_OK) != 0)
    return IoError("cannot load CA file " + ca_file + ": " + std::strerror(errno));
  curl_easy_setopt(h, CURLOPT_CAINFO, ca_file.c_str());
  curl_easy_setopt(h, CURLOPT_CAPATH, nullptr);  // the file instead of the system's CAs, not beside them
  return Status::Ok();
}

void SetProxy(CURL* h, const std::optional<Proxy>& proxy, bool tunnel) {
  if (!proxy) {
    curl_easy_setopt(h, CURLOPT_PROXY, "");  // "": none, whatever the environment says
    return;
  }
  curl_easy_setopt(h, CURLOPT_PROXY, proxy->Label().c_str());
  // Otherwise curl would still skip the proxy for hosts in $NO_PROXY: the caller has decided.
  curl_easy_setopt(h, CURLOPT_NOPROXY, "");
  if (!proxy->username.empty()) {
    curl_easy_setopt(h, CURLOPT_PROXYUSERNAME, proxy->username.c_str());
    curl_easy_setopt(h, CURLOPT_PROXYPASSWORD, proxy->password.c_str());
  }
  if (tunnel) curl_easy_setopt(h, CURLOPT_HTTPPROXYTUNNEL, 1L);
}

std::string Seconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", seconds);
  return buf;
}

bool IsTlsError(CURLcode rc) {
  switch (rc) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CRL_BADFILE:
      return true;
    default:
      return false;
  }
}

std::string Phase(CURL* h, CURLcode rc, bool tls_first, const std::optional<Proxy>& proxy) {
  // With a proxy, the connection is the proxy's: say so, or a refusal looks like the receiver's.
  const std::string via = proxy ? "proxy " + proxy->Label() : "";
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
      return "resolve";
    case CURLE_COULDNT_RESOLVE_PROXY:
      return via + ": resolve";
    case CURLE_PROXY:  // the SOCKS handshake: its words say what
      return via;
    case CURLE_COULDNT_CONNECT:
      return proxy ? via + ": connect" : "connect";
    default:
      break;
  }
  if (IsTlsError(rc)) return "TLS handshake";
  if (rc != CURLE_OPERATION_TIMEDOUT) return "";
  // curl stamps each phase as it completes (at least 1 µs after the start).
  curl_off_t resolved = 0, connected = 0, handshaken = 0;
  curl_easy_getinfo(h, CURLINFO_NAMELOOKUP_TIME_T, &resolved);
  curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &connected);
  curl_easy_getinfo(h, CURLINFO_APPCONNECT_TIME_T, &handshaken);
  if (resolved == 0) return "resolve";
  if (connected == 0) return proxy ? via + ": connect" : "connect";
  if (tls_first && handshaken == 0) return "TLS handshake";
  return "";
}

long RefusedConnect(CURL* h) {
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_HTTP_CONNECTCODE, &code);
  return code != 0 && (code < 200 || code > 299) ? code : 0;
}

std::string Describe(CURLcode rc, const char* errbuf, double timeout_seconds) {
  if (rc == CURLE_OPERATION_TIMEDOUT) return "timed out after " + Seconds(timeout_seconds) + " s";
  std::string text = errbuf && *errbuf ? errbuf : curl_easy_strerror(rc);
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return TruncateUtf8(text, 300);
}

}  // namespace tw::notify::curl

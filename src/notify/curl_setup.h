// What the HTTP and SMTP transfers (http_client.h, smtp.h) set up alike on a libcurl easy
// handle: the library initialised once per process, TLS (1.2 or later, the peer's certificate
// and name verified against the system's CAs or a CA file), the proxy (set explicitly, so curl
// never picks one from the environment by itself), one timeout for the whole transfer, and
// the words for what failed. Internal to src/notify.
//
// An easy handle belongs to one thread at a time; these functions only set its options.
#pragma once

#include <curl/curl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "notify/url.h"

namespace tw::notify::curl {

struct EasyCleanup {
  void operator()(CURL* h) const { curl_easy_cleanup(h); }
};
struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using Easy = std::unique_ptr<CURL, EasyCleanup>;
using Slist = std::unique_ptr<curl_slist, SlistFree>;

// A fresh easy handle (curl_global_init has run once before it). Null only when curl cannot
// allocate one.
Easy NewEasy();

// The lines as a curl list (options that take one keep a pointer: it must outlive the transfer).
Slist MakeList(const std::vector<std::string>& lines);

// The options every transfer has: `protocols` only ("http,https": a URL cannot make curl speak
// file:// or anything else), no signals (curl runs on the delivery thread), no redirects
// followed, errors into `errbuf` (CURL_ERROR_SIZE bytes), and the whole transfer bounded by
// `seconds` (resolve to last byte; at least a millisecond, as curl takes 0 for no limit).
void SetCommon(CURL* h, const char* protocols, char* errbuf, double seconds);

// TLS 1.2 or later, the certificate and its name verified, against `ca_file` (PEM) or the
// system's trust store when "". The error (a CA file that cannot be read) names the file.
Status SetTls(CURL* h, const std::string& ca_file);

// Through `proxy`, or straight to the host when nullopt. `tunnel`: an HTTP proxy opens a
// CONNECT tunnel even for plain text (what SMTP needs; HTTPS always tunnels).
void SetProxy(CURL* h, const std::optional<Proxy>& proxy, bool tunnel);

// "%g" seconds: "0.5".
std::string Seconds(double seconds);

// Whether `rc` says the TLS handshake or the peer's certificate failed.
bool IsTlsError(CURLcode rc);

// Where a transfer that ended in `rc` was when it failed, when no protocol step says better:
// "resolve", "connect", "TLS handshake", the proxy's ("proxy socks5://p:1080: connect"), or ""
// once connected (TLS included where `tls_first`), read from curl's timers.
std::string Phase(CURL* h, CURLcode rc, bool tls_first, const std::optional<Proxy>& proxy);

// The HTTP proxy's answer to CONNECT when it was not 2xx (the tunnel refused: 407 wants other
// credentials), else 0.
long RefusedConnect(CURL* h);

// What failed, in curl's words (its error buffer, else its code's text), with control
// characters replaced; "timed out after N s" for a timeout.
std::string Describe(CURLcode rc, const char* errbuf, double timeout_seconds);

}  // namespace tw::notify::curl

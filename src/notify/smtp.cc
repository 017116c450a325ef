#include "notify/smtp.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "notify/curl_setup.h"
#include "notify/render.h"
#include "notify/secrets.h"
#include "notify/url.h"

namespace tw::notify {
namespace {

constexpr size_t kMaxTextBytes = 500;  // of a reply's text kept for messages
constexpr size_t kMaxReplyLines = 200;

// A CR or LF in an address would end the command early and smuggle in another.
bool UsableAddress(const std::string& a) {
  return !a.empty() && std::none_of(a.begin(), a.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f || c == '<' || c == '>';
  });
}

std::string_view WithoutLineEnd(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The conversation as curl reports it, for naming the step a reply or a failure belongs to:
// the commands sent (their verbs only; AUTH's lines carry credentials) and the server's reply
// lines. Fed by curl's callbacks, on the thread that runs the transfer.
class Transcript {
 public:
  Transcript(SmtpSecurity security, bool wants_auth) : security_(security), wants_auth_(wants_auth) {}

  // A command line curl sent.
  void Sent(std::string_view raw) {
    if (quitting_ || in_auth_) return;  // in AUTH, what follows the command is credentials
    sent_any_ = true;
    const std::string line(WithoutLineEnd(raw));
    const std::string upper = AsciiUpper(line.substr(0, 16));
    if (upper.starts_with("QUIT")) {
      quitting_ = true;  // the verdict is in: QUIT's answer changes nothing
    } else if (upper.starts_with("EHLO") || upper.starts_with("HELO")) {
      step_ = upper.substr(0, 4);
    } else if (upper == "STARTTLS") {
      step_ = "STARTTLS";
      starttls_sent_ = true;
    } else if (upper.starts_with("AUTH ")) {
      step_ = upper.substr(0, upper.find(' ', 5));  // "AUTH PLAIN", never the initial response
      in_auth_ = true;
    } else if (upper.starts_with("MAIL FROM:")) {
      step_ = "MAIL FROM";
    } else if (upper.starts_with("RCPT TO:")) {
      const std::string to = line.substr(8);
      step_ = "RCPT TO " + to.substr(0, to.find('>') + 1);
    } else if (upper == "DATA") {
      step_ = "DATA";
    }
  }

  // A reply line; false (which ends the session) for a line that is not SMTP, or for an EHLO
  // that offers no AUTH where we have a password to send.
  bool Received(std::string_view raw) {
    if (quitting_) return true;
    const std::string_view line = WithoutLineEnd(raw);
    const bool digits = line.size() >= 3 && std::all_of(line.begin(), line.begin() + 3, [](char c) {
                          return c >= '0' && c <= '9';
                        });
    if (!digits || (line.size() > 3 && line[3] != ' ' && line[3] != '-')) {
      not_smtp_ = std::string(line.substr(0, 80));
      return false;
    }
    if (lines_.size() < kMaxReplyLines) lines_.emplace_back(line.size() > 4 ? line.substr(4) : "");
    if (line.size() > 3 && line[3] == '-') return true;  // more lines of this reply follow

    SmtpReply reply{std::stoi(std::string(line.substr(0, 3))), "", step_};
    bool offers_auth = false;
    for (size_t i = 0; i < lines_.size(); ++i) {
      reply.text += (i ? "\n" : "") + lines_[i];
      const std::string keyword = AsciiUpper(lines_[i].substr(0, 5));
      offers_auth = offers_auth || (i > 0 && (keyword == "AUTH " || keyword == "AUTH="));
    }
    lines_.clear();
    if (in_auth_ && reply.code != 334) in_auth_ = false;  // 334: the next credential, please
    last_ = std::move(reply);
    if (step_ == "DATA" && last_->code == 354) step_ = "end of data";  // what the next reply answers
    // curl goes on without AUTH where the last EHLO offers none; we were asked to authenticate.
    const bool last_ehlo = security_ != SmtpSecurity::kStartTls || starttls_sent_;
    if ((step_ == "EHLO" || step_ == "HELO") && last_->code / 100 == 2 && last_ehlo && wants_auth_ && !offers_auth) {
      no_auth_ = true;
      return false;
    }
    return true;
  }

  const std::string& step() const { return step_; }
  bool started() const { return sent_any_ || last_.has_value(); }
  bool starttls_sent() const { return starttls_sent_; }
  const std::optional<SmtpReply>& last() const { return last_; }  // the latest whole reply
  const std::string& not_smtp() const { return not_smtp_; }
  bool no_auth() const { return no_auth_; }

 private:
  const SmtpSecurity security_;
  const bool wants_auth_;
  std::string step_ = "greeting";  // what the next reply answers
  bool sent_any_ = false, quitting_ = false, in_auth_ = false, starttls_sent_ = false, no_auth_ = false;
  std::vector<std::string> lines_;  // of the reply being read
  std::optional<SmtpReply> last_;
  std::string not_smtp_;
};

size_t OnReplyLine(char* data, size_t size, size_t n, void* p) {
  return static_cast<Transcript*>(p)->Received(std::string_view(data, size * n)) ? size * n : 0;
}

int OnDebug(CURL*, curl_infotype type, char* data, size_t size, void* p) {
  if (type == CURLINFO_HEADER_OUT) static_cast<Transcript*>(p)->Sent(std::string_view(data, size));
  return 0;
}

// What can be refused before connecting.
Status Check(const SmtpServer& s, const std::string& from, const std::vector<std::string>& to,
             const std::string& label) {
  if (!IsHostName(s.host)) return InvalidArgument(label + ": the host is not a host name or IP address");
  if (s.port == 0) return InvalidArgument(label + ": port 0");
  if (!UsableAddress(from))
    return InvalidArgument(label + ": MAIL FROM: the sender address is empty or has a space, control "
                           "character, '<' or '>'");
  if (to.empty()) return InvalidArgument(label + ": RCPT TO: no recipients");
  for (const auto& a : to)
    if (!UsableAddress(a))
      return InvalidArgument(label + ": RCPT TO: a recipient address is empty or has a space, control "
                             "character, '<' or '>'");
  if (!s.username.empty() && s.security == SmtpSecurity::kNone && !IsLoopbackHost(s.host))
    return InvalidArgument(label + ": AUTH: refusing to send a password in plain text to a host that is "
                           "not this machine (use tls = \"starttls\" or \"tls\")");
  return Status::Ok();
}

// Two parts, the plain text first (RFC 2046 5.1.4: the richest last), each UTF-8 in
// quoted-printable: 7-bit, lines of 76 bytes at most, whatever the text.
using Mime = std::unique_ptr<curl_mime, decltype(&curl_mime_free)>;
Mime MimeFor(CURL* h, const EmailMessage& m) {
  Mime mime(curl_mime_init(h), &curl_mime_free);
  for (const auto& [type, body] : {std::pair{"text/plain; charset=utf-8", &m.text},
                                   std::pair{"text/html; charset=utf-8", &m.html}}) {
    curl_mimepart* part = curl_mime_addpart(mime.get());
    curl_mime_data(part, body->data(), body->size());
    curl_mime_type(part, type);
    curl_mime_encoder(part, "quoted-printable");
  }
  return mime;
}

}  // namespace

std::string SmtpLabel(const SmtpServer& s) {
  const std::string host = s.host.find(':') != std::string::npos ? "[" + s.host + "]" : s.host;
  return std::string(s.security == SmtpSecurity::kTls ? "smtps" : "smtp") + "://" + host + ":" +
         std::to_string(s.port);
}

Result<SmtpReply> SmtpSend(const SmtpServer& server, const std::string& from, const std::vector<std::string>& to,
                           const EmailMessage& message) {
  const std::string label = SmtpLabel(server);
  TW_RETURN_IF_ERROR(Check(server, from, to, label));
  std::optional<Proxy> proxy;
  if (!server.proxy.empty()) {
    Result<Proxy> p = ParseProxy(server.proxy);
    if (!p.ok()) return InvalidArgument(label + ": proxy: " + p.status().message());
    proxy = *p;
  }
  // Whatever the server says is passed on; it must not pass on the credentials.
  std::vector<std::string> secrets = proxy ? proxy->Secrets() : std::vector<std::string>{};
  if (!server.password.empty())
    secrets.insert(secrets.end(), {server.password, Base64(server.password),
                                   Base64(std::string(1, '\0') + server.username + '\0' + server.password)});
  const auto scrub = [&](std::string text) {
    text = ScrubSecrets(std::move(text), secrets);
    for (char& c : text)
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n') c = '?';
    return TruncateUtf8(text, kMaxTextBytes);
  };

  const curl::Easy easy = curl::NewEasy();
  if (!easy) return IoError(label + ": libcurl cannot make a handle");
  CURL* h = easy.get();
  char errbuf[CURL_ERROR_SIZE];
  curl::SetCommon(h, "smtp,smtps", errbuf, server.timeout_seconds);
  if (server.security != SmtpSecurity::kNone) {
    // Before any traffic: a CA file that cannot be read is a configuration error.
    if (Status s = curl::SetTls(h, server.ca_file); !s.ok()) return IoError(label + ": TLS: " + s.message());
  }
  curl::SetProxy(h, proxy, /*tunnel=*/true);
  // No path: the EHLO name is this machine's host name.
  curl_easy_setopt(h, CURLOPT_URL, label.c_str());
  // STARTTLS required: a server that does not offer it is refused, not spoken to in plain text.
  curl_easy_setopt(h, CURLOPT_USE_SSL,
                   static_cast<long>(server.security == SmtpSecurity::kNone ? CURLUSESSL_NONE : CURLUSESSL_ALL));
  if (!server.username.empty()) {
    curl_easy_setopt(h, CURLOPT_USERNAME, server.username.c_str());
    curl_easy_setopt(h, CURLOPT_PASSWORD, server.password.c_str());
    curl_easy_setopt(h, CURLOPT_SASL_IR, 1L);  // AUTH PLAIN with its response: one round trip
  }
  curl_easy_setopt(h, CURLOPT_MAIL_FROM, from.c_str());
  const curl::Slist rcpt = curl::MakeList(to);
  curl_easy_setopt(h, CURLOPT_MAIL_RCPT, rcpt.get());
  std::vector<std::string> header_lines = message.headers;
  header_lines.emplace_back("Content-Type: multipart/alternative");  // curl adds the boundary
  const curl::Slist headers = curl::MakeList(header_lines);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());  // for SMTP, the message's headers
  const Mime mime = MimeFor(h, message);
  curl_easy_setopt(h, CURLOPT_MIMEPOST, mime.get());
  curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);  // QUIT at the end: one session per message
  Transcript t(server.security, !server.username.empty());
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnReplyLine);  // SMTP replies come as "headers"
  curl_easy_setopt(h, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);  // a proxy's answer to CONNECT does not
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);  // only for the commands: all goes to OnDebug
  curl_easy_setopt(h, CURLOPT_DEBUGFUNCTION, OnDebug);
  curl_easy_setopt(h, CURLOPT_DEBUGDATA, &t);
  const CURLcode rc = curl_easy_perform(h);

  const auto verdict = [&] {
    SmtpReply r = *t.last();
    r.text = scrub(r.text);
    return r;
  };
  if (rc == CURLE_OK && t.last()) return verdict();  // the answer to the message's end
  const auto fail = [&](const std::string& step, const std::string& what) {
    return IoError(label + ": " + step + ": " + scrub(what));
  };
  if (const long refused = curl::RefusedConnect(h); refused != 0)
    return fail("proxy CONNECT", "the proxy answered " + std::to_string(refused));
  if (!t.not_smtp().empty()) return fail(t.step(), "not an SMTP reply: \"" + t.not_smtp() + "\"");
  if (t.no_auth())
    return InvalidArgument(label + ": AUTH: the server offers no AUTH" +
                           (server.security == SmtpSecurity::kNone ? " over plain text" : ""));
  if (t.last() && t.last()->code >= 400 && t.last()->code < 600) return verdict();  // refused at some step
  if (rc == CURLE_USE_SSL_FAILED && !t.starttls_sent())
    return InvalidArgument(label + ": STARTTLS: the server does not offer STARTTLS");
  if (rc == CURLE_LOGIN_DENIED)
    return InvalidArgument(label + ": AUTH: the server offers no mechanism curl can use with a password");
  // curl refuses what a server sends beyond its STARTTLS answer, before the handshake: anyone on
  // the path could have put it there, to be taken for the encrypted server's words
  // (CVE-2011-0411 and its kin; curl's CVE-2021-22947).
  if (rc == CURLE_WEIRD_SERVER_REPLY && t.step() == "STARTTLS" && t.last() && t.last()->code == 220)
    return fail("STARTTLS", "the server sent more than its reply before the TLS handshake");
  std::string step = t.step();
  if (!t.started()) {
    const std::string phase = curl::Phase(h, rc, server.security == SmtpSecurity::kTls, proxy);
    step = phase.empty() ? "greeting" : phase;
  } else if (curl::IsTlsError(rc)) {
    step = t.step() == "STARTTLS" ? "STARTTLS: TLS handshake" : "TLS handshake";
  }
  return fail(step, curl::Describe(rc, errbuf, server.timeout_seconds));
}

}  // namespace tw::notify

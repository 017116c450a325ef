// One message per SMTP session (RFC 5321) over libcurl, for the email channel: STARTTLS
// (RFC 3207; required, never skipped) or implicit TLS (RFC 8314), the certificate and its name
// verified, SNI sent; AUTH with the best mechanism both sides speak (curl's choice: PLAIN or
// LOGIN with the usual servers); several recipients; the message (email.h) sent as
// multipart/alternative, each part UTF-8 in quoted-printable, MIME-encoded and dot-stuffed by
// curl; optionally through a proxy (an HTTP CONNECT tunnel or SOCKS). One timeout bounds the
// session, which ends with QUIT: no connection is kept between messages.
//
// Errors are values, like http_client.h's: a Status naming the server and the step that failed
// ("smtp://mail.example.com:587: STARTTLS: TLS handshake: SSL certificate problem: ..."). Any
// reply at all that decides the message (accepted, or refused at some step) is a reply, not an
// error: judging it is the channel's business. The password never appears in a message, nor
// in the server's text we pass on. Thread-compatible: each call has its own curl handle.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "notify/email.h"

namespace tw::notify {

enum class SmtpSecurity {
  kStartTls,  // plain connect, then STARTTLS before anything else (port 587)
  kTls,       // TLS from the first byte (port 465)
  kNone,      // plain text throughout: local relays only (AUTH only on loopback)
};

struct SmtpServer {
  std::string host;
  uint16_t port = 587;
  SmtpSecurity security = SmtpSecurity::kStartTls;
  std::string username;  // "" = no AUTH
  std::string password;  // a secret
  double timeout_seconds = 30;
  std::string ca_file;  // PEM trust anchors instead of the system's (tests, private CAs)
  // "" = none, else url.h's Proxy (http:// tunnels with CONNECT; socks4/4a/5/5h); TLS and its
  // verification stay end to end with the server. A secret when it holds a password.
  std::string proxy;
};

struct SmtpReply {
  int code = 0;       // 250 once the message is accepted, else the refusing reply's code
  std::string text;   // its lines without the codes, joined by "\n" (cut, secrets scrubbed)
  std::string step;   // what it answered: greeting, EHLO, AUTH PLAIN, RCPT TO <a@b>, DATA, end of data...
};

// Sends `message` from `from` to every address of `to`. All or nothing: a recipient refused
// aborts the transaction, and that refusal is the reply. The error's code says whether trying
// again can help: kIo (connection, TLS, proxy, timeout, a reply that is not SMTP) can;
// kInvalidArgument (AUTH asked over plain text to a remote host, a server without STARTTLS or
// without a mechanism curl speaks, an address with a CR or LF, a bad proxy) cannot.
Result<SmtpReply> SmtpSend(const SmtpServer& server, const std::string& from, const std::vector<std::string>& to,
                           const EmailMessage& message);

// "smtp://host:port" or "smtps://host:port" (implicit TLS): how messages name the server.
std::string SmtpLabel(const SmtpServer& server);

}  // namespace tw::notify

// One message per SMTP session (RFC 5321), for the email channel: Boost.Asio over TCP, STARTTLS
// (RFC 3207) or implicit TLS (RFC 8314) through OpenSSL with certificate and host-name
// verification and SNI, AUTH PLAIN or LOGIN (RFC 4954), several recipients, DATA with
// dot-stuffing. One deadline bounds the whole session (resolve, connect, handshakes, every
// command); no connection is kept between messages.
//
// Errors are values, like http_client.h's: a Status naming the server and the step that failed
// ("smtp://mail.example.com:587: STARTTLS: TLS handshake: certificate verify failed: hostname
// mismatch"). Any reply at all that decides the message (accepted, or refused at some step) is
// a reply, not an error: judging it is the channel's business. The password never appears in
// a message, nor in the server's text we pass on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

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
  std::string helo;     // the EHLO name; "" = this machine's host name
};

struct SmtpReply {
  int code = 0;       // 250 once the message is accepted, else the refusing reply's code
  std::string text;   // its lines without the codes, joined by "\n" (cut, secrets scrubbed)
  std::string step;   // what it answered: greeting, EHLO, AUTH PLAIN, RCPT TO <a@b>, DATA, end of data...
};

// Sends `message` (an RFC 5322 message; see email.h) from `from` to every address of `to`.
// All or nothing: a recipient refused aborts the transaction, and that refusal is the reply.
// The error's code says whether trying again can help: kIo (connection, TLS, timeout, a reply
// that is not SMTP) can; kInvalidArgument (AUTH asked over plain text to a remote host, a
// server without STARTTLS or without a mechanism we speak, an address with a CR or LF) cannot.
Result<SmtpReply> SmtpSend(const SmtpServer& server, const std::string& from,
                           const std::vector<std::string>& to, std::string_view message);

// "smtp://host:port" or "smtps://host:port" (implicit TLS): how messages name the server.
std::string SmtpLabel(const SmtpServer& server);

// The DATA payload: line ends made CRLF, a '.' opening a line doubled, ending in CRLF "." CRLF.
std::string DotStuff(std::string_view message);

}  // namespace tw::notify

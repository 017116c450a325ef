// A real SMTP server on loopback for tests of the email channel: Debian's python3-aiosmtpd,
// run by /usr/bin/python3 (the system's: a pyenv python on PATH would not have it) from a
// script written at test time. Plain, STARTTLS-only or implicit TLS, with a self-signed
// certificate (its ca_file); AUTH with one user, all mechanisms or some; scripted refusals of
// RCPT or DATA. Every accepted message is saved: its envelope, raw bytes, whether it came over
// TLS and after which AUTH, and what Python's email package reads in it (headers decoded from
// RFC 2047, each MIME part decoded), so tests check our MIME with a decoder not our own.
//
// The constructor returns once the server accepts connections; the destructor kills it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tw::testing {

struct SmtpServerOptions {
  enum class Tls { kNone, kStartTls, kImplicit };
  Tls tls = Tls::kNone;
  std::string cert_san = "IP:127.0.0.1,DNS:localhost";  // the certificate's names
  // AUTH, required before MAIL, with these credentials ("" = no AUTH offered).
  std::string username, password;
  std::vector<std::string> exclude_mechanisms;  // e.g. {"PLAIN"}: only LOGIN offered
  bool auth_over_plain_text = false;            // offer AUTH before TLS (loopback relays)
  std::string rcpt_reply;  // answer every RCPT TO with this line ("451 4.3.0 Try later")
  std::string data_reply;  // answer every message's end with this instead of taking it
};

struct ReceivedMessage {
  std::string mail_from;
  std::vector<std::string> rcpt_tos;
  std::string raw;  // as received, dot-stuffing undone
  bool tls = false;
  std::string tls_version;  // "TLSv1.3"
  std::string auth_mechanism, auth_login, auth_password;  // "" without AUTH
  // As Python's email package (policy.default) reads the message:
  std::vector<std::pair<std::string, std::string>> headers;  // decoded values, in order
  std::string content_type;                                  // the top level's
  struct Part {
    std::string type, charset, encoding, text;  // text decoded
  };
  std::vector<Part> parts;           // the leaves, in order
  std::vector<std::string> defects;  // what the parser found wrong, anywhere

  std::string Header(const std::string& name) const;  // first of that name (any case), or ""
};

class SmtpTestServer {
 public:
  // Whether /usr/bin/python3 can import aiosmtpd; if not, *why says what to install.
  static bool Available(std::string* why);

  explicit SmtpTestServer(SmtpServerOptions options = {});  // throws if it does not start
  ~SmtpTestServer();
  SmtpTestServer(const SmtpTestServer&) = delete;
  SmtpTestServer& operator=(const SmtpTestServer&) = delete;

  uint16_t port() const;
  const std::string& ca_file() const;  // "" without TLS
  std::vector<ReceivedMessage> messages() const;  // those saved so far, in order
  std::string log() const;                        // the server's stderr, for failure messages

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw::testing

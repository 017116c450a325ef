// A minimal SMTP server for tests, in C++, on 127.0.0.1 port 0 (plain text, no AUTH): it takes
// every sender, recipient and message and keeps each message as it arrived, dot-stuffing
// undone (RFC 5321 4.5.2). For checking the bytes curl puts on the wire (MIME, quoted-printable,
// line lengths) without Python's aiosmtpd (smtp_server.h). Serves one connection at a time on a
// thread of its own; a message is kept before its 250 is sent, so it is there once the send
// returns. The destructor stops it at once.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tw::testing {

class SmtpSink {
 public:
  SmtpSink();
  ~SmtpSink();
  SmtpSink(const SmtpSink&) = delete;
  SmtpSink& operator=(const SmtpSink&) = delete;

  uint16_t port() const { return port_; }
  std::vector<std::string> messages() const;  // each with CRLF line ends, without the final "."

 private:
  void Serve(int fd);

  int listen_fd_ = -1;
  int client_fd_ = -1;  // guarded by mu_
  uint16_t port_ = 0;
  mutable std::mutex mu_;
  std::vector<std::string> messages_;
  std::thread thread_;
};

}  // namespace tw::testing

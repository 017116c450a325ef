#include "support/smtp_sink.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>

namespace tw::testing {

namespace {

void Send(int fd, const std::string& s) { ::send(fd, s.data(), s.size(), MSG_NOSIGNAL); }

// One line with its CRLF; "" when the connection ends.
std::string ReadLine(int fd) {
  std::string line;
  char c = 0;
  while (::recv(fd, &c, 1, 0) == 1) {
    line += c;
    if (c == '\n') break;
  }
  return line;
}

std::string Verb(const std::string& line) {
  std::string v;
  for (char c : line.substr(0, 4)) v += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return v;
}

}  // namespace

SmtpSink::SmtpSink() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::listen(listen_fd_, 8);
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] {
    for (;;) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      {
        std::lock_guard lock(mu_);
        client_fd_ = fd;
      }
      Serve(fd);
      std::lock_guard lock(mu_);
      client_fd_ = -1;
      ::close(fd);
    }
  });
}

SmtpSink::~SmtpSink() {
  ::shutdown(listen_fd_, SHUT_RDWR);  // ends a pending accept
  {
    std::lock_guard lock(mu_);
    if (client_fd_ >= 0) ::shutdown(client_fd_, SHUT_RDWR);
  }
  thread_.join();
  ::close(listen_fd_);
}

std::vector<std::string> SmtpSink::messages() const {
  std::lock_guard lock(mu_);
  return messages_;
}

void SmtpSink::Serve(int fd) {
  Send(fd, "220 tw-sink ESMTP\r\n");
  for (std::string line; !(line = ReadLine(fd)).empty();) {
    const std::string verb = Verb(line);
    if (verb == "EHLO" || verb == "HELO" || verb == "MAIL" || verb == "RCPT" || verb == "RSET" || verb == "NOOP") {
      Send(fd, "250 OK\r\n");
    } else if (verb == "QUIT") {
      Send(fd, "221 Bye\r\n");
      return;
    } else if (verb == "DATA") {
      Send(fd, "354 End with <CRLF>.<CRLF>\r\n");
      std::string message;
      for (std::string l; !(l = ReadLine(fd)).empty() && l != ".\r\n";)
        message += l.front() == '.' ? l.substr(1) : l;
      {
        std::lock_guard lock(mu_);
        messages_.push_back(message);
      }
      Send(fd, "250 2.0.0 Accepted\r\n");
    } else {
      Send(fd, "500 5.5.2 Unknown command\r\n");
    }
  }
}

}  // namespace tw::testing

#include "support/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace tw::testing {

namespace {

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void Reset(int fd) {
  struct linger l {1, 0};  // close with RST, not FIN
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Reads a request: its head (through the blank line) and a Content-Length body.
bool ReadRequest(int fd, std::string* head, std::string* body) {
  std::string buf;
  char chunk[8192];
  size_t end = std::string::npos;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t r = ::recv(fd, chunk, sizeof chunk, 0);
    if (r <= 0) return false;
    buf.append(chunk, static_cast<size_t>(r));
  }
  *head = buf.substr(0, end + 4);
  *body = buf.substr(end + 4);
  size_t length = 0;
  const std::string lower = Lower(*head);
  const size_t cl = lower.find("\r\ncontent-length:");
  if (cl != std::string::npos) length = std::stoul(lower.substr(cl + 17));
  while (body->size() < length) {
    const ssize_t r = ::recv(fd, chunk, sizeof chunk, 0);
    if (r <= 0) return false;
    body->append(chunk, static_cast<size_t>(r));
  }
  return true;
}

}  // namespace

FaultProxy::FaultProxy(uint16_t upstream_port) : upstream_(upstream_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0)
    throw std::runtime_error("FaultProxy: cannot listen");
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::lock_guard lock(mu_);
      workers_.emplace_back([this, c] { Serve(c); });
    }
  });
}

FaultProxy::~FaultProxy() {
  stop_ = true;
  acceptor_.join();
  ::close(listen_fd_);
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
}

void FaultProxy::Arm(Fault fault, int times, std::string match) {
  std::lock_guard lock(mu_);
  armed_.push_back({fault, times, std::move(match)});
}

std::vector<std::string> FaultProxy::lines() const {
  std::lock_guard lock(mu_);
  return lines_;
}

void FaultProxy::Serve(int client) {
  timeval tv{10, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string head, body;
  if (!ReadRequest(client, &head, &body)) {
    ::close(client);
    return;
  }
  ++requests_;
  std::optional<Fault> fault;
  {
    std::lock_guard lock(mu_);
    lines_.push_back(head.substr(0, head.find("\r\n")));
    for (auto& a : armed_)
      if (a.times > 0 && head.find(a.match) != std::string::npos) {
        --a.times;
        fault = a.fault;
        break;
      }
  }
  if (fault && *fault != Fault::kResetMidBody) ++faults_done_;
  if (fault == Fault::kSlowDown) {
    const std::string xml =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>"
        "<Message>Please reduce your request rate.</Message></Error>";
    const std::string answer = "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: " +
                               std::to_string(xml.size()) + "\r\nConnection: close\r\n\r\n" + xml;
    WriteAll(client, answer.data(), answer.size());
    ::close(client);
    return;
  }
  if (fault == Fault::kReset) {
    Reset(client);
    return;
  }
  // To the server, with the connection closed after its answer.
  const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(upstream_);
  if (::connect(up, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(up);
    Reset(client);
    return;
  }
  std::string forwarded = head.substr(0, head.size() - 2);
  forwarded += "Connection: close\r\n\r\n";
  WriteAll(up, forwarded.data(), forwarded.size());
  WriteAll(up, body.data(), body.size());
  std::string answer;
  char chunk[16384];
  for (;;) {
    const ssize_t r = ::recv(up, chunk, sizeof chunk, 0);
    if (r <= 0) break;
    answer.append(chunk, static_cast<size_t>(r));
  }
  ::close(up);
  if (fault == Fault::kResetMidBody) {
    const size_t body_at = answer.find("\r\n\r\n");
    const size_t body_len = body_at == std::string::npos ? 0 : answer.size() - body_at - 4;
    if (body_len >= 2) {
      ++faults_done_;
      WriteAll(client, answer.data(), body_at + 4 + body_len / 2);
      Reset(client);
      return;
    }
  }
  WriteAll(client, answer.data(), answer.size());
  ::close(client);
}

}  // namespace tw::testing

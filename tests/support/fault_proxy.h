// A loopback HTTP proxy (as a reverse proxy: clients talk to it as to the server) that passes
// requests to a server on 127.0.0.1 and, when armed, answers the next matching requests with a
// fault instead: a 503 SlowDown (S3's answer to too many requests), a connection reset before
// any answer, or a reset halfway through the server's body. For the object-store client's
// retries. Each connection carries one exchange ("Connection: close" is forced upstream).
// Serves on its own threads; the destructor stops and joins them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tw::testing {

class FaultProxy {
 public:
  enum class Fault { kSlowDown, kReset, kResetMidBody };
  explicit FaultProxy(uint16_t upstream_port);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  uint16_t port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The next `times` requests whose request line and headers contain `match` get `fault`.
  void Arm(Fault fault, int times, std::string match);
  int faults_done() const { return faults_done_.load(); }
  int requests() const { return requests_.load(); }
  // Request lines seen, in order.
  std::vector<std::string> lines() const;

 private:
  void Serve(int client);
  uint16_t upstream_;
  uint16_t port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> faults_done_{0}, requests_{0};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<std::thread> workers_;
  struct Armed {
    Fault fault;
    int times;
    std::string match;
  };
  std::vector<Armed> armed_;
  std::vector<std::string> lines_;
};

}  // namespace tw::testing

// What the tests' forwarding proxies (connect_proxy.h, socks_proxy.h) share: listen on
// 127.0.0.1 port 0, serve each connection on a thread of its own with blocking sockets, let the
// proxy's handshake read the client's request, answer it and name the target, then copy bytes
// both ways until either side closes. The destructor shuts every socket down and joins every
// thread, whatever a client is doing.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tw::testing {

class TunnelServer {
 public:
  using Socket = boost::asio::ip::tcp::socket;
  // Runs on the connection's thread: reads the request from `client`, connects to the target
  // with Connect(), answers the client; returns the target's socket, or null to drop the client.
  using Handshake = std::function<std::shared_ptr<Socket>(Socket& client)>;

  explicit TunnelServer(Handshake handshake);
  ~TunnelServer();
  TunnelServer(const TunnelServer&) = delete;
  TunnelServer& operator=(const TunnelServer&) = delete;

  uint16_t port() const;
  // A socket connected to host:port (a name resolved, each of its addresses tried), or null.
  std::shared_ptr<Socket> Connect(const std::string& host, const std::string& port);

 private:
  void Serve(std::shared_ptr<Socket> client);
  std::shared_ptr<Socket> Track(std::shared_ptr<Socket> s);

  Handshake handshake_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::mutex mu_;
  std::vector<std::shared_ptr<Socket>> sockets_;
  std::vector<std::thread> threads_;
  std::thread accepting_;
};

}  // namespace tw::testing

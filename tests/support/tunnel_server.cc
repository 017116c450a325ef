#include "support/tunnel_server.h"

#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/write.hpp>

namespace tw::testing {

namespace asio = boost::asio;
using asio::ip::tcp;

TunnelServer::TunnelServer(Handshake handshake)
    : handshake_(std::move(handshake)), acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  accepting_ = std::thread([this] {
    for (;;) {
      auto s = std::make_shared<Socket>(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(*s, ec);
      if (ec) return;
      std::lock_guard lock(mu_);
      sockets_.push_back(s);
      threads_.emplace_back([this, s] { Serve(s); });
    }
  });
}

TunnelServer::~TunnelServer() {
  // shutdown() wakes the threads blocked in accept() and read(); close() alone may not.
  ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
  accepting_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    for (auto& s : sockets_) ::shutdown(s->native_handle(), SHUT_RDWR);
    threads = std::move(threads_);
  }
  for (auto& t : threads) t.join();
  boost::system::error_code ec;
  acceptor_.close(ec);
}

uint16_t TunnelServer::port() const { return acceptor_.local_endpoint().port(); }

std::shared_ptr<TunnelServer::Socket> TunnelServer::Track(std::shared_ptr<Socket> s) {
  std::lock_guard lock(mu_);
  sockets_.push_back(s);
  return s;
}

std::shared_ptr<TunnelServer::Socket> TunnelServer::Connect(const std::string& host, const std::string& port) {
  auto upstream = Track(std::make_shared<Socket>(ioc_));
  boost::system::error_code ec;
  tcp::resolver resolver(ioc_);
  auto found = resolver.resolve(host, port, ec);
  if (!ec) asio::connect(*upstream, found, ec);
  return ec ? nullptr : upstream;
}

void TunnelServer::Serve(std::shared_ptr<Socket> client) {
  std::shared_ptr<Socket> upstream = handshake_(*client);
  boost::system::error_code ec;
  if (!upstream) {
    client->close(ec);
    return;
  }
  auto pump = [](std::shared_ptr<Socket> from, std::shared_ptr<Socket> to) {
    char buf[16384];
    boost::system::error_code e;
    for (;;) {
      const size_t n = from->read_some(asio::buffer(buf), e);
      if (e || n == 0) break;
      asio::write(*to, asio::buffer(buf, n), e);
      if (e) break;
    }
    to->shutdown(tcp::socket::shutdown_send, e);
  };
  std::thread back(pump, upstream, client);
  pump(client, upstream);
  back.join();
}

}  // namespace tw::testing

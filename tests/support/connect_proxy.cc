#include "support/connect_proxy.h"

#include <sys/socket.h>

#include <boost/asio.hpp>

#include <mutex>
#include <thread>

namespace tw::testing {

namespace asio = boost::asio;
using asio::ip::tcp;

struct ConnectProxy::Impl {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
  bool refuse = false;
  mutable std::mutex mu;
  std::vector<std::string> requests;
  std::vector<std::shared_ptr<tcp::socket>> sockets;
  std::vector<std::thread> threads;
  std::thread accepting;

  void Serve(std::shared_ptr<tcp::socket> client) {
    boost::system::error_code ec;
    asio::streambuf head;
    asio::read_until(*client, head, "\r\n\r\n", ec);
    if (ec) return;
    std::istream in(&head);
    std::string line;
    std::getline(in, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    {
      std::lock_guard lock(mu);
      requests.push_back(line);
    }
    const size_t sp = line.find(' '), sp2 = line.rfind(' ');
    const std::string target = line.substr(sp + 1, sp2 - sp - 1);
    const size_t colon = target.rfind(':');
    if (refuse || line.rfind("CONNECT ", 0) != 0 || colon == std::string::npos) {
      asio::write(*client, asio::buffer(std::string("HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")), ec);
      client->close(ec);
      return;
    }
    auto upstream = std::make_shared<tcp::socket>(ioc);
    {
      std::lock_guard lock(mu);
      sockets.push_back(upstream);
    }
    tcp::resolver resolver(ioc);
    auto found = resolver.resolve(target.substr(0, colon), target.substr(colon + 1), ec);
    if (!ec) asio::connect(*upstream, found, ec);
    if (ec) {
      asio::write(*client, asio::buffer(std::string("HTTP/1.1 502 Bad Gateway\r\n\r\n")), ec);
      return;
    }
    asio::write(*client, asio::buffer(std::string("HTTP/1.1 200 Connection established\r\n\r\n")), ec);
    auto pump = [](std::shared_ptr<tcp::socket> from, std::shared_ptr<tcp::socket> to) {
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
};

ConnectProxy::ConnectProxy(bool refuse) : impl_(new Impl) {
  impl_->refuse = refuse;
  impl_->accepting = std::thread([this] {
    for (;;) {
      auto s = std::make_shared<tcp::socket>(impl_->ioc);
      boost::system::error_code ec;
      impl_->acceptor.accept(*s, ec);
      if (ec) return;
      std::lock_guard lock(impl_->mu);
      impl_->sockets.push_back(s);
      impl_->threads.emplace_back([this, s] { impl_->Serve(s); });
    }
  });
}

ConnectProxy::~ConnectProxy() {
  // shutdown() wakes the threads blocked in accept() and read(); close() alone may not.
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  impl_->accepting.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(impl_->mu);
    for (auto& s : impl_->sockets) ::shutdown(s->native_handle(), SHUT_RDWR);
    threads = std::move(impl_->threads);
  }
  for (auto& t : threads) t.join();
  boost::system::error_code ec;
  impl_->acceptor.close(ec);
}

std::string ConnectProxy::url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->acceptor.local_endpoint().port());
}

std::vector<std::string> ConnectProxy::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

}  // namespace tw::testing

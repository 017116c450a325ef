#include "support/connect_proxy.h"

#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <istream>
#include <mutex>

#include "notify/render.h"
#include "support/tunnel_server.h"

namespace tw::testing {

namespace asio = boost::asio;

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void Answer(TunnelServer::Socket& client, const std::string& status_and_headers) {
  boost::system::error_code ec;
  asio::write(client, asio::buffer(status_and_headers + "Content-Length: 0\r\nConnection: close\r\n\r\n"), ec);
}

}  // namespace

struct ConnectProxy::Impl {
  ConnectProxyOptions options;
  mutable std::mutex mu;
  std::vector<std::string> requests, authorizations;
  std::unique_ptr<TunnelServer> server;

  std::shared_ptr<TunnelServer::Socket> Handshake(TunnelServer::Socket& client) {
    boost::system::error_code ec;
    asio::streambuf head;
    asio::read_until(client, head, "\r\n\r\n", ec);
    if (ec) return nullptr;
    std::istream in(&head);
    std::string line, authorization;
    std::getline(in, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    for (std::string h; std::getline(in, h) && h != "\r";) {
      if (!h.empty() && h.back() == '\r') h.pop_back();
      const size_t colon = h.find(':');
      if (colon != std::string::npos && Lower(h.substr(0, colon)) == "proxy-authorization")
        authorization = h.substr(h.find_first_not_of(' ', colon + 1));
    }
    {
      std::lock_guard lock(mu);
      requests.push_back(line);
      authorizations.push_back(authorization);
    }
    const size_t sp = line.find(' '), sp2 = line.rfind(' ');
    const std::string target = line.substr(sp + 1, sp2 - sp - 1);
    const size_t colon = target.rfind(':');
    if (options.refuse || line.rfind("CONNECT ", 0) != 0 || colon == std::string::npos) {
      Answer(client, "HTTP/1.1 407 Proxy Authentication Required\r\n");
      return nullptr;
    }
    const bool wants_credentials = !options.username.empty();
    if (wants_credentials && authorization != "Basic " + notify::Base64(options.username + ":" + options.password)) {
      Answer(client, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"tw-test\"\r\n");
      return nullptr;
    }
    std::string host = target.substr(0, colon);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    auto upstream = server->Connect(host, target.substr(colon + 1));
    if (!upstream) {
      Answer(client, "HTTP/1.1 502 Bad Gateway\r\n");
      return nullptr;
    }
    asio::write(client, asio::buffer(std::string("HTTP/1.1 200 Connection established\r\n\r\n")), ec);
    return ec ? nullptr : upstream;
  }
};

ConnectProxy::ConnectProxy(bool refuse) : ConnectProxy(ConnectProxyOptions{.refuse = refuse}) {}

ConnectProxy::ConnectProxy(ConnectProxyOptions options) : impl_(new Impl) {
  impl_->options = std::move(options);
  impl_->server = std::make_unique<TunnelServer>([this](TunnelServer::Socket& c) { return impl_->Handshake(c); });
}

ConnectProxy::~ConnectProxy() { impl_->server.reset(); }  // joins before the rest goes

std::string ConnectProxy::url() const { return "http://" + host_port(); }

std::string ConnectProxy::host_port() const { return "127.0.0.1:" + std::to_string(impl_->server->port()); }

std::vector<std::string> ConnectProxy::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

std::vector<std::string> ConnectProxy::authorizations() const {
  std::lock_guard lock(impl_->mu);
  return impl_->authorizations;
}

}  // namespace tw::testing

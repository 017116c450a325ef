#include "support/socks_proxy.h"

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <mutex>

#include "support/tunnel_server.h"

namespace tw::testing {

namespace asio = boost::asio;
using Socket = TunnelServer::Socket;

namespace {

// Reads exactly n bytes; "" with *ok false on a short read.
std::string Read(Socket& s, size_t n, bool* ok) {
  std::string buf(n, '\0');
  boost::system::error_code ec;
  if (n > 0) asio::read(s, asio::buffer(buf), ec);
  *ok = *ok && !ec;
  return buf;
}

// Up to and without a NUL (SOCKS4's user id and 4a's host name).
std::string ReadCString(Socket& s, bool* ok) {
  std::string out;
  for (int i = 0; i < 256 && *ok; ++i) {
    const std::string c = Read(s, 1, ok);
    if (!*ok || c[0] == '\0') break;
    out += c;
  }
  return out;
}

void Write(Socket& s, const std::string& bytes) {
  boost::system::error_code ec;
  asio::write(s, asio::buffer(bytes), ec);
}

unsigned Byte(const std::string& s, size_t i) { return static_cast<unsigned char>(s[i]); }

std::string Port(const std::string& two) { return std::to_string(Byte(two, 0) << 8 | Byte(two, 1)); }

std::string Ipv4(const std::string& four) {
  return std::to_string(Byte(four, 0)) + "." + std::to_string(Byte(four, 1)) + "." + std::to_string(Byte(four, 2)) +
         "." + std::to_string(Byte(four, 3));
}

}  // namespace

struct SocksProxy::Impl {
  SocksProxyOptions options;
  mutable std::mutex mu;
  std::vector<SocksRequest> requests;
  std::unique_ptr<TunnelServer> server;

  void Record(const SocksRequest& r) {
    std::lock_guard lock(mu);
    requests.push_back(r);
  }

  std::shared_ptr<Socket> Handshake(Socket& client) {
    bool ok = true;
    const std::string version = Read(client, 1, &ok);
    if (!ok) return nullptr;
    if (version[0] == 4) return Socks4(client);
    if (version[0] == 5) return Socks5(client);
    return nullptr;
  }

  std::shared_ptr<Socket> Socks4(Socket& client) {
    bool ok = true;
    const std::string head = Read(client, 7, &ok);  // CMD, DSTPORT, DSTIP
    SocksRequest r{4, "", ReadCString(client, &ok), false};
    if (!ok) return nullptr;
    std::string host = Ipv4(head.substr(3, 4));
    if (Byte(head, 3) == 0 && Byte(head, 4) == 0 && Byte(head, 5) == 0 && Byte(head, 6) != 0)
      host = ReadCString(client, &ok);  // 4a: the proxy resolves
    r.target = host + ":" + Port(head.substr(1, 2));
    std::shared_ptr<Socket> upstream;
    if (ok && Byte(head, 0) == 1 && (options.username.empty() || r.user == options.username))
      upstream = server->Connect(host, Port(head.substr(1, 2)));
    r.granted = upstream != nullptr;
    Record(r);
    Write(client, std::string("\0", 1) + (upstream ? "\x5a" : "\x5b") + std::string(6, '\0'));
    return upstream;
  }

  std::shared_ptr<Socket> Socks5(Socket& client) {
    bool ok = true;
    const std::string methods = Read(client, Byte(Read(client, 1, &ok), 0), &ok);
    if (!ok) return nullptr;
    const char wanted = options.username.empty() ? '\x00' : '\x02';
    if (methods.find(wanted) == std::string::npos) {
      Write(client, "\x05\xff");  // no acceptable method
      Record({5, "", "", false});
      return nullptr;
    }
    Write(client, std::string("\x05") + wanted);
    SocksRequest r{5, "", "", false};
    if (wanted == '\x02') {  // RFC 1929
      Read(client, 1, &ok);
      r.user = Read(client, Byte(Read(client, 1, &ok), 0), &ok);
      const std::string password = Read(client, Byte(Read(client, 1, &ok), 0), &ok);
      const bool accepted = ok && r.user == options.username && password == options.password;
      Write(client, std::string("\x01") + (accepted ? '\x00' : '\x01'));
      if (!accepted) {
        Record(r);
        return nullptr;
      }
    }
    const std::string head = Read(client, 4, &ok);  // VER, CMD, RSV, ATYP
    if (!ok) return nullptr;
    std::string host;
    if (Byte(head, 3) == 1) {
      host = Ipv4(Read(client, 4, &ok));
    } else if (Byte(head, 3) == 3) {
      host = Read(client, Byte(Read(client, 1, &ok), 0), &ok);
    } else {
      return nullptr;  // IPv6: not needed on loopback here
    }
    const std::string port = Port(Read(client, 2, &ok));
    r.target = host + ":" + port;
    std::shared_ptr<Socket> upstream = ok && Byte(head, 1) == 1 ? server->Connect(host, port) : nullptr;
    r.granted = upstream != nullptr;
    Record(r);
    // Success, bound to 0.0.0.0:0 (the client has no use for it); else "connection refused".
    Write(client, std::string("\x05") + (upstream ? '\x00' : '\x05') + std::string("\x00\x01", 2) +
                      std::string(6, '\0'));
    return upstream;
  }
};

SocksProxy::SocksProxy(SocksProxyOptions options) : impl_(new Impl) {
  impl_->options = std::move(options);
  impl_->server = std::make_unique<TunnelServer>([this](Socket& c) { return impl_->Handshake(c); });
}

SocksProxy::~SocksProxy() { impl_->server.reset(); }  // joins before the rest goes

std::string SocksProxy::url(const std::string& scheme) const { return scheme + "://" + host_port(); }

std::string SocksProxy::host_port() const { return "127.0.0.1:" + std::to_string(impl_->server->port()); }

std::vector<SocksRequest> SocksProxy::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

}  // namespace tw::testing

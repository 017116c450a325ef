#include "support/http_server.h"

#include <openssl/ssl.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "support/test_cert.h"

namespace tw::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct HttpServer::Impl {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::optional<TestCertificate> cert;
  std::optional<ssl::context> tls;
  std::string ca_file;
  uint16_t port = 0;
  std::thread thread;

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  std::deque<Reply> script;
  Reply fallback;
  HttpServer::Responder responder;
  std::vector<RecordedRequest> requests;

  Impl(bool use_tls, const std::string& san, const std::string& cn) {
    if (use_tls) {
      cert.emplace(san, cn);
      ca_file = cert->cert_file();
      tls.emplace(ssl::context::tls_server);
      if (SSL_CTX_use_certificate(tls->native_handle(), cert->cert()) != 1 ||
          SSL_CTX_use_PrivateKey(tls->native_handle(), cert->key()) != 1)
        throw std::runtime_error("test TLS server: cannot use its certificate");
    }
    tcp::endpoint local(asio::ip::make_address("127.0.0.1"), 0);
    acceptor.open(local.protocol());
    acceptor.bind(local);
    acceptor.listen();
    port = acceptor.local_endpoint().port();
    asio::co_spawn(ioc, Accept(), [](std::exception_ptr) {});
    thread = std::thread([this] { ioc.run(); });
  }

  ~Impl() {
    ioc.stop();
    if (thread.joinable()) thread.join();
  }

  asio::awaitable<void> Accept() {
    for (;;) {
      tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
      // Each connection on its own: one waiting out a delay must not hold up the next.
      if (tls) {
        asio::co_spawn(ioc, ServeTls(std::move(socket)), [](std::exception_ptr) {});
      } else {
        asio::co_spawn(ioc, Serve(std::move(socket)), [](std::exception_ptr) {});
      }
    }
  }

  asio::awaitable<void> ServeTls(tcp::socket socket) {
    ssl::stream<tcp::socket> stream(std::move(socket), *tls);
    error_code ec;
    // A client that rejects the certificate ends here; that is what some tests want.
    co_await stream.async_handshake(ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    if (co_await Answer(stream)) {
      co_await stream.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
    }
    stream.lowest_layer().close(ec);
  }

  asio::awaitable<void> Serve(tcp::socket socket) {
    co_await Answer(socket);
    error_code ec;
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
  }

  // Reads one request, records it, answers as scripted. False when no answer was sent.
  template <typename Stream>
  asio::awaitable<bool> Answer(Stream& stream) {
    error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    co_await http::async_read(stream, buffer, req, token);
    if (ec) co_return false;
    Reply reply = Record(req);
    if (reply.close_without_answer) co_return false;
    if (reply.delay_seconds > 0) {
      asio::steady_timer timer(ioc);
      timer.expires_after(std::chrono::duration_cast<asio::steady_timer::duration>(
          std::chrono::duration<double>(reply.delay_seconds)));
      co_await timer.async_wait(token);
    }
    http::response<http::string_body> res{static_cast<http::status>(reply.status), 11};
    for (const auto& [name, value] : reply.headers) res.insert(name, value);
    res.set(http::field::connection, "close");
    res.body() = reply.body;
    res.prepare_payload();
    co_await http::async_write(stream, res, token);
    co_return !ec;
  }

  // Stores the request and takes the reply it gets, under the lock.
  Reply Record(const http::request<http::string_body>& req) {
    RecordedRequest r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    r.body = req.body();
    for (const auto& field : req)
      r.headers.emplace(Lower(std::string(field.name_string())), std::string(field.value()));
    r.time = SteadySeconds();
    std::lock_guard lock(mu);
    std::optional<Reply> chosen;
    if (responder) chosen = responder(r);
    requests.push_back(std::move(r));
    cv.notify_all();
    if (chosen) return std::move(*chosen);
    if (script.empty()) return fallback;
    Reply next = std::move(script.front());
    script.pop_front();
    return next;
  }
};

HttpServer::HttpServer(bool tls)
    : impl_(std::make_unique<Impl>(tls, "IP:127.0.0.1,DNS:localhost", "localhost")) {}

HttpServer::HttpServer(bool tls, std::string cert_host)
    : impl_(std::make_unique<Impl>(tls, "DNS:" + cert_host, cert_host)) {}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const { return impl_->port; }

std::string HttpServer::url(const std::string& target) const {
  std::string path = target.empty() || target.front() != '/' ? "/" + target : target;
  return std::string(impl_->tls ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(impl_->port) + path;
}

void HttpServer::Script(std::vector<Reply> replies) {
  std::lock_guard lock(impl_->mu);
  impl_->script.assign(std::make_move_iterator(replies.begin()),
                       std::make_move_iterator(replies.end()));
}

void HttpServer::SetDefault(Reply r) {
  std::lock_guard lock(impl_->mu);
  impl_->fallback = std::move(r);
}

void HttpServer::SetResponder(Responder f) {
  std::lock_guard lock(impl_->mu);
  impl_->responder = std::move(f);
}

std::vector<RecordedRequest> HttpServer::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

bool HttpServer::WaitForRequests(size_t n, double timeout_seconds) const {
  std::unique_lock lock(impl_->mu);
  return impl_->cv.wait_for(lock, std::chrono::duration<double>(timeout_seconds),
                            [&] { return impl_->requests.size() >= n; });
}

const std::string& HttpServer::ca_file() const { return impl_->ca_file; }

}  // namespace tw::testing

#include "notify/net.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace tw::notify::net {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

struct PendingResolve {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  error_code ec;
  std::vector<tcp::endpoint> endpoints;
};

}  // namespace

// getaddrinfo cannot be cancelled, and asio's async_resolve waits for it even when cancelled
// (its io_context cannot even be destroyed before). So a name is looked up on a thread of its
// own that is abandoned at the deadline, to finish whenever the resolver gives up.
Result<std::vector<tcp::endpoint>> Resolve(const std::string& host, const std::string& port,
                                           std::chrono::steady_clock::time_point deadline) {
  error_code ec;
  asio::ip::address address = asio::ip::make_address(host, ec);
  if (!ec) return std::vector<tcp::endpoint>{{address, static_cast<uint16_t>(std::stoi(port))}};
  auto pending = std::make_shared<PendingResolve>();
  std::thread([pending, host, port] {
    asio::io_context ioc;
    tcp::resolver resolver(ioc);
    error_code ec;
    auto results = resolver.resolve(host, port, tcp::resolver::numeric_service, ec);
    std::lock_guard lock(pending->mu);
    pending->ec = ec;
    for (const auto& entry : results) pending->endpoints.push_back(entry.endpoint());
    pending->done = true;
    pending->cv.notify_all();
  }).detach();
  std::unique_lock lock(pending->mu);
  if (!pending->cv.wait_until(lock, deadline, [&] { return pending->done; }))
    return std::vector<tcp::endpoint>{};
  if (pending->ec) return IoError(pending->ec.message());
  if (pending->endpoints.empty()) return IoError("no address for the host");
  return std::move(pending->endpoints);
}

bool IsIpLiteral(const std::string& host) {
  error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  error_code ec;
  asio::ip::address a = asio::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

Status SetUpClientContext(ssl::context& ctx, const std::string& ca_file) {
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  ctx.set_verify_mode(ssl::verify_peer);
  error_code ec;
  if (!ca_file.empty()) {
    ctx.load_verify_file(ca_file, ec);
    if (ec) return IoError("cannot load CA file " + ca_file + ": " + ec.message());
  } else {
    ctx.set_default_verify_paths(ec);
    if (ec) return IoError("no system trust store: " + ec.message());
  }
  return Status::Ok();
}

VerifyHost::VerifyHost(std::string host) : host_(host), check_(std::move(host)) {}

bool VerifyHost::operator()(bool preverified, ssl::verify_context& ctx) const {
  bool ok = check_(preverified, ctx);
  if (preverified && !ok) {
    X509_STORE_CTX_set_error(ctx.native_handle(), IsIpLiteral(host_)
                                                      ? X509_V_ERR_IP_ADDRESS_MISMATCH
                                                      : X509_V_ERR_HOSTNAME_MISMATCH);
  }
  return ok;
}

std::string HandshakeError(const error_code& ec, SSL* ssl) {
  std::string message = ec.message();
  long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) message += std::string(": ") + X509_verify_cert_error_string(verify);
  return message;
}

Deadline DeadlineIn(double seconds) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(std::max(seconds, 0.0)));
}

void RunUntil(boost::asio::io_context& ioc, boost::asio::steady_timer& timer, Deadline deadline,
              boost::asio::awaitable<void> talk, bool* done, bool* timed_out,
              std::function<void()> abort) {
  timer.expires_at(deadline);
  timer.async_wait([done, timed_out, abort](boost::system::error_code ec) {
    if (ec || *done) return;
    *timed_out = true;
    abort();
  });
  std::exception_ptr thrown;
  boost::asio::co_spawn(ioc, std::move(talk), [&](std::exception_ptr e) {
    thrown = e;
    *done = true;
    timer.cancel();
  });
  ioc.run();
  if (thrown) std::rethrow_exception(thrown);
}

}  // namespace tw::notify::net

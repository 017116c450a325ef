// What the HTTP and SMTP clients share: a name lookup bounded by a deadline, running one
// conversation under that deadline, the client TLS context (TLS 1.2 or later, the system's
// trust store or a given CA file), and certificate host-name verification with SNI. Internal to
// src/notify.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tw::notify::net {

using tcp = boost::asio::ip::tcp;
namespace ssl = boost::asio::ssl;

// The addresses of `host` (a name or an IP literal) at `port` (digits). An empty list with no
// error means the deadline passed first. Errors name neither host nor port: callers add the
// redacted server they are talking to.
Result<std::vector<tcp::endpoint>> Resolve(const std::string& host, const std::string& port,
                                           std::chrono::steady_clock::time_point deadline);

using Deadline = std::chrono::steady_clock::time_point;

// `seconds` from now (a negative timeout: now).
Deadline DeadlineIn(double seconds);

// Runs the coroutine `talk` on `ioc` until it ends. Should `deadline` come first, `*timed_out`
// is set and `abort` runs (closing the socket makes the pending operations fail, so `talk`
// ends). `*done` is set once `talk` has ended; what it threw is rethrown.
void RunUntil(boost::asio::io_context& ioc, boost::asio::steady_timer& timer, Deadline deadline,
              boost::asio::awaitable<void> talk, bool* done, bool* timed_out,
              std::function<void()> abort);

bool IsIpLiteral(const std::string& host);
// 127.0.0.0/8, ::1 and "localhost": where plain text never leaves the machine.
bool IsLoopbackHost(const std::string& host);

// A client context verifying the peer against `ca_file` (PEM), or the system's trust store
// when "". The error says which of the two failed to load.
Status SetUpClientContext(ssl::context& ctx, const std::string& ca_file);

// Verifies the certificate and its name against `host`, and sends SNI (names only: RFC 6066
// forbids addresses). Call before the handshake.
template <typename TlsStream>  // an asio ssl::stream or a beast ssl_stream
Status SetUpClientStream(TlsStream& stream, const std::string& host);

// host_name_verification, plus a verify result that says why: without it OpenSSL reports a
// rejected name only as "certificate verify failed".
class VerifyHost {
 public:
  explicit VerifyHost(std::string host);
  bool operator()(bool preverified, ssl::verify_context& ctx) const;

 private:
  std::string host_;
  ssl::host_name_verification check_;
};

// "certificate verify failed" is all an asio error says; this adds OpenSSL's reason
// ("hostname mismatch", "self-signed certificate") when the peer's certificate was refused.
std::string HandshakeError(const boost::system::error_code& ec, SSL* ssl);

template <typename TlsStream>
Status SetUpClientStream(TlsStream& stream, const std::string& host) {
  stream.set_verify_callback(VerifyHost(host));
  if (!IsIpLiteral(host) && !SSL_set_tlsext_host_name(stream.native_handle(), host.c_str()))
    return IoError("cannot set the server name");
  return Status::Ok();
}

}  // namespace tw::notify::net

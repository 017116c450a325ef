#include "notify/http_client.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <vector>

#include "notify/net.h"

namespace tw::notify {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

bool IEquals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

// A URL cut into its parts, before any of them is judged.
struct RawUrl {
  std::string scheme;  // lower-cased
  bool has_userinfo = false;
  std::string_view authority;  // host[:port], brackets kept, user info gone
  std::string_view host;       // brackets gone
  std::string_view port;       // as written; may be empty
  std::string_view path;       // may be empty
  std::string_view query;      // with its '?', may be empty
  bool has_fragment = false;
};

bool IsHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

// Splits and checks everything but user info; the messages never quote the URL.
Result<RawUrl> Split(std::string_view url) {
  RawUrl u;
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return InvalidArgument("URL scheme must be http or https");
  for (char c : url.substr(0, sep)) u.scheme += static_cast<char>(std::tolower(c));
  if (u.scheme != "http" && u.scheme != "https")
    return InvalidArgument("URL scheme must be http or https");
  std::string_view rest = url.substr(sep + 3);
  for (char c : rest) {
    // A space, CR or LF in the target would corrupt (or forge) the request line.
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return InvalidArgument("URL contains a space or control character");
  }
  if (size_t hash = rest.find('#'); hash != std::string_view::npos) {
    u.has_fragment = true;
    rest = rest.substr(0, hash);
  }
  size_t auth_end = std::min(rest.find('/'), rest.find('?'));
  std::string_view auth = rest.substr(0, auth_end);
  rest = auth_end == std::string_view::npos ? std::string_view() : rest.substr(auth_end);
  if (size_t at = auth.rfind('@'); at != std::string_view::npos) {
    u.has_userinfo = true;
    auth = auth.substr(at + 1);
  }
  u.authority = auth;
  size_t q = rest.find('?');
  u.path = rest.substr(0, q);
  if (q != std::string_view::npos) u.query = rest.substr(q);

  std::string_view after_host;
  if (!auth.empty() && auth.front() == '[') {
    size_t close = auth.find(']');
    if (close == std::string_view::npos)
      return InvalidArgument("URL has an unclosed '[' in its host");
    u.host = auth.substr(1, close - 1);
    for (char c : u.host) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.')
        return InvalidArgument("URL host is not a valid IPv6 address");
    }
    after_host = auth.substr(close + 1);
  } else {
    size_t colon = auth.find(':');
    u.host = auth.substr(0, colon);
    after_host = colon == std::string_view::npos ? std::string_view() : auth.substr(colon);
    for (char c : u.host) {
      if (!IsHostChar(c))
        return InvalidArgument("URL host has a character a host name cannot have");
    }
  }
  if (u.host.empty()) return InvalidArgument("URL has no host");
  if (!after_host.empty()) {
    if (after_host.front() != ':') return InvalidArgument("URL has text after its host");
    u.port = after_host.substr(1);
    bool digits =
        !u.port.empty() && u.port.size() <= 5 &&
        std::all_of(u.port.begin(), u.port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoi(std::string(u.port)) < 1 || std::stoi(std::string(u.port)) > 65535)
      return InvalidArgument("URL port is not a number in 1..65535");
  }
  return u;
}

std::string HostHeader(const Url& url) {
  std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  bool default_port =
      (url.scheme == "http" && url.port == "80") || (url.scheme == "https" && url.port == "443");
  return default_port ? host : host + ":" + url.port;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// One POST: the connection, the deadline that bounds every step, and what came of it.
class Exchange {
 public:
  Exchange(asio::io_context& ioc, const Url& url, const Headers& headers, std::string_view body,
           const HttpOptions& options)
      : url_(url),
        headers_(headers),
        body_(body),
        options_(options),
        redacted_(RedactUrl(Join(url))),
        ioc_(ioc),
        timer_(ioc) {}

  Result<HttpResponse> Run() {
    deadline_ = net::DeadlineIn(options_.timeout_seconds);
    if (url_.scheme == "https") {
      Status s = SetUpTls();  // before any traffic: a bad CA file is a configuration error
      if (!s.ok()) return s;
    } else {
      plain_.emplace(ioc_);
    }
    const std::string proxy = options_.proxy ? *options_.proxy : ProxyFromEnvironment(url_);
    if (!proxy.empty()) {
      Result<Url> p = ParseUrl(proxy);
      if (!p.ok() || p->scheme != "http")
        return IoError(redacted_ + ": proxy: not an http://host:port URL (" + RedactUrl(proxy) + ")");
      proxy_ = *p;
    }
    const Url& first_hop = proxy_ ? *proxy_ : url_;
    auto endpoints = net::Resolve(first_hop.host, first_hop.port, deadline_);
    if (!endpoints.ok()) return Fail(endpoints.status().message());
    if (endpoints->empty()) return Fail(TimedOut());
    endpoints_ = std::move(*endpoints);
    step_ = "connect";
    net::RunUntil(ioc_, timer_, deadline_, Talk(), &done_, &timed_out_, [this] { Abort(); });
    if (!status_.ok()) return status_;
    return std::move(response_);
  }

 private:
  static std::string Join(const Url& u) { return u.scheme + "://" + HostHeader(u) + u.target; }

  std::string TimedOut() const {
    return "timed out after " + Seconds(options_.timeout_seconds) + " s";
  }

  Status Fail(std::string message) { return IoError(redacted_ + ": " + step_ + ": " + message); }

  // Records the failure of the current step; a timeout wins over the error it caused.
  void Record(const error_code& ec) {
    if (timed_out_) {
      status_ = Fail(TimedOut());
    } else {
      const bool handshake = step_ == std::string_view("TLS handshake") && tls_;
      status_ = Fail(handshake ? net::HandshakeError(ec, tls_->native_handle()) : ec.message());
    }
  }

  void Abort() {
    error_code ignored;
    if (plain_) plain_->socket().close(ignored);
    if (tls_) beast::get_lowest_layer(*tls_).socket().close(ignored);
  }

  Status SetUpTls() {
    tls_ctx_.emplace(ssl::context::tls_client);
    Status s = net::SetUpClientContext(*tls_ctx_, options_.ca_file);
    if (s.ok()) {
      tls_.emplace(ioc_, *tls_ctx_);
      s = net::SetUpClientStream(*tls_, url_.host);
    }
    return s.ok() ? s : IoError(redacted_ + ": TLS handshake: " + s.message());
  }

  asio::awaitable<void> Talk() {
    error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    step_ = "connect";
    beast::tcp_stream& tcp = plain_ ? *plain_ : beast::get_lowest_layer(*tls_);
    co_await tcp.async_connect(endpoints_, token);
    if (ec || timed_out_) co_return Record(ec);
    if (tls_ && proxy_) {
      co_await Tunnel(tcp);
      if (!status_.ok()) co_return;
    }
    if (tls_) {
      step_ = "TLS handshake";
      co_await tls_->async_handshake(ssl::stream_base::client, token);
      if (ec || timed_out_) co_return Record(ec);
      co_await WriteRead(*tls_);
      if (!status_.ok()) co_return;
      // close_notify, for politeness; the answer is in hand, so nothing here can fail the call.
      done_ = true;
      timer_.expires_at(
          std::min(deadline_, std::chrono::steady_clock::now() + std::chrono::seconds(1)));
      timer_.async_wait([this](error_code e) {
        if (!e) Abort();
      });
      co_await tls_->async_shutdown(token);
      timer_.cancel();
    } else {
      co_await WriteRead(*plain_);
      if (status_.ok()) plain_->socket().shutdown(tcp::socket::shutdown_both, ec);
    }
  }

  // CONNECT host:port through the proxy; on a 2xx the socket is a tunnel to the host.
  asio::awaitable<void> Tunnel(beast::tcp_stream& tcp) {
    error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    step_ = "proxy CONNECT";
    const std::string authority = HostHeader(url_) + (url_.port == "443" ? ":443" : "");
    http::request<http::empty_body> req{http::verb::connect, authority, 11};
    req.set(http::field::host, authority);
    req.set(http::field::user_agent, options_.user_agent);
    co_await http::async_write(tcp, req, token);
    if (ec || timed_out_) co_return Record(ec);
    beast::flat_buffer buffer;
    http::response_parser<http::empty_body> parser;
    parser.skip(true);  // a CONNECT answer has no body: what follows is the tunnel
    co_await http::async_read_header(tcp, buffer, parser, token);
    if (ec || timed_out_) co_return Record(ec);
    const unsigned code = parser.get().result_int();
    if (code < 200 || code >= 300) {
      status_ = Fail("the proxy answered " + std::to_string(code) + " " +
                     std::string(parser.get().reason()));
      co_return;
    }
    if (buffer.size() != 0) status_ = Fail("the proxy sent bytes before the tunnel opened");
  }

  template <typename Stream>
  asio::awaitable<void> WriteRead(Stream& stream) {
    error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    step_ = "write";
    // Through a proxy, a plain-HTTP request names its whole URL (absolute form).
    const std::string target = proxy_ && !tls_ ? Join(url_) : url_.target;
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, HostHeader(url_));
    req.set(http::field::user_agent, options_.user_agent);
    req.set(http::field::connection, "close");  // one request per connection, see the header
    for (const auto& [name, value] : headers_) req.insert(name, value);
    req.body() = std::string(body_);
    req.prepare_payload();  // Content-Length
    co_await http::async_write(stream, req, token);
    if (ec || timed_out_) co_return Record(ec);

    step_ = "read";
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(options_.max_body_bytes);
    co_await http::async_read(stream, buffer, parser, token);
    // Too long a body is cut, not an error: the status and headers are what a channel needs.
    // The parser refuses a declared Content-Length over the limit before reading any of it,
    // so such a body comes back empty; a chunked one comes back with what fit.
    bool cut = ec == http::error::body_limit && parser.is_header_done();
    if ((ec && !cut) || timed_out_) co_return Record(ec);
    const auto& msg = parser.get();
    response_.status = static_cast<int>(msg.result_int());
    response_.body = msg.body().substr(0, options_.max_body_bytes);
    for (const auto& field : msg)
      response_.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }

  const Url& url_;
  const Headers& headers_;
  std::string_view body_;
  const HttpOptions& options_;
  const std::string redacted_;
  asio::io_context& ioc_;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<tcp::endpoint> endpoints_;
  asio::steady_timer timer_;
  std::optional<ssl::context> tls_ctx_;
  std::optional<beast::tcp_stream> plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
  std::optional<Url> proxy_;
  const char* step_ = "resolve";
  bool timed_out_ = false;
  bool done_ = false;
  Status status_;
  HttpResponse response_;
};

}  // namespace

Result<Url> ParseUrl(std::string_view url) {
  auto raw = Split(url);
  if (!raw.ok()) return raw.status();
  // Credentials belong in a header the caller sets on purpose, not smuggled in the URL.
  if (raw->has_userinfo) return InvalidArgument("URL must not contain user info");
  Url u;
  u.scheme = raw->scheme;
  u.host = std::string(raw->host);
  u.port = raw->port.empty() ? (u.scheme == "https" ? "443" : "80") : std::string(raw->port);
  u.target = raw->path.empty() ? "/" : std::string(raw->path);
  u.target += raw->query;
  return u;
}

std::string RedactUrl(std::string_view url) {
  auto raw = Split(url);
  if (!raw.ok()) return "(unparseable URL)";
  std::string out = raw->scheme + "://" + std::string(raw->authority) + "/";
  std::string_view path = raw->path.empty() ? std::string_view() : raw->path.substr(1);
  size_t slash = path.find('/');
  out += path.substr(0, slash);
  if (slash != std::string_view::npos)
    out += "/…";
  else if (!raw->query.empty() || raw->has_fragment)
    out += "…";
  return out;
}

namespace {
std::string Env(const char* lower, const char* upper) {
  if (const char* v = std::getenv(lower); v && *v) return v;
  if (const char* v = std::getenv(upper); v && *v) return v;
  return "";
}
bool IsLoopback(const std::string& host) {
  return host == "localhost" || host.starts_with("127.") || host == "::1";
}
}  // namespace

std::string ProxyFromEnvironment(const Url& url) {
  if (IsLoopback(url.host)) return "";
  std::string proxy = url.scheme == "https" ? Env("https_proxy", "HTTPS_PROXY") : Env("http_proxy", "HTTP_PROXY");
  if (proxy.empty()) return "";
  if (proxy.find("://") == std::string::npos) proxy = "http://" + proxy;  // "proxy:3128", as curl takes it
  const std::string no_proxy = Env("no_proxy", "NO_PROXY");
  std::string host = url.host;
  for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t at = 0; at <= no_proxy.size();) {
    size_t comma = no_proxy.find(',', at);
    if (comma == std::string::npos) comma = no_proxy.size();
    std::string entry = no_proxy.substr(at, comma - at);
    at = comma + 1;
    entry.erase(0, entry.find_first_not_of(' '));
    entry.erase(entry.find_last_not_of(' ') + 1);
    for (char& c : entry) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (entry.empty()) continue;
    if (entry == "*") return "";
    if (entry.front() == '.') entry.erase(0, 1);
    if (host == entry || (host.size() > entry.size() && host.ends_with("." + entry))) return "";
  }
  return proxy;
}

std::string HttpResponse::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (IEquals(n, name)) return v;
  }
  return "";
}

Result<HttpResponse> HttpPost(const Url& url, const Headers& headers, std::string_view body,
                              const HttpOptions& options) {
  for (const auto& [name, value] : headers) {
    // CR or LF would end the header early and let the rest forge headers or a body.
    auto bad = [](char c) { return c == '\r' || c == '\n' || c == '\0'; };
    if (name.empty() || std::any_of(name.begin(), name.end(), bad) ||
        std::any_of(value.begin(), value.end(), bad))
      return InvalidArgument("HTTP header \"" + name.substr(0, name.find_first_of("\r\n")) +
                             "\" has an empty name or a CR, LF or NUL");  // the value may be secret
  }
  // Boost reports some failures (allocation, a malformed field) by throwing; none may escape.
  try {
    asio::io_context ioc;
    Exchange exchange(ioc, url, headers, body, options);
    return exchange.Run();
  } catch (const std::exception& e) {
    return IoError(RedactUrl(url.scheme + "://" + HostHeader(url) + url.target) + ": " + e.what());
  }
}

}  // namespace tw::notify

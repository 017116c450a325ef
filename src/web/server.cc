#include "web/server.h"

#include <sqlite3.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <optional>
#include <thread>

#include "store/store.h"
#include "web/access.h"
#include "web/assets.h"
#include "web/api.h"
#include "web/target.h"

namespace tw::web {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct WebServer::Impl {
  WebOptions options;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::unique_ptr<asio::thread_pool> workers;
  std::thread io_thread;
  std::atomic<int> in_flight{0};
  std::atomic<bool> stopping{false};
  uint16_t port = 0;

  void Accept();
};

namespace {

// A request's SQL stops at its deadline (or when the server stops): SQLite calls this every
// kProgressSteps virtual-machine steps, and a nonzero answer interrupts the statement.
constexpr int kProgressSteps = 1000;
struct Deadline {
  Clock::time_point at;
  const std::atomic<bool>* stopping;
  bool hit = false;
};
int CheckDeadline(void* p) {
  auto* d = static_cast<Deadline*>(p);
  if (Clock::now() >= d->at || d->stopping->load()) d->hit = true;
  return d->hit ? 1 : 0;
}

// One request answered from the store, on a worker thread.
Answer AnswerFromStore(const WebOptions& options, const Target& t, Clock::time_point arrived,
                       const std::atomic<bool>& stopping) {
  Result<std::unique_ptr<store::Db>> db = store::OpenReadOnly(options.db_path);
  if (!db.ok()) return ErrorAnswer(503, "the store cannot be read: " + db.status().message());
  Deadline deadline{arrived + options.time_limit, &stopping};
  sqlite3_progress_handler((*db)->raw(), kProgressSteps, CheckDeadline, &deadline);
  ApiContext ctx;
  ctx.now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  ctx.live_window_seconds = options.live_window_seconds;
  ctx.refresh_seconds = options.refresh_seconds;
  ctx.db_path = options.db_path;
  ctx.role_patterns = &options.role_patterns;
  Answer a = AnswerApi(t, **db, ctx);
  sqlite3_progress_handler((*db)->raw(), 0, nullptr, nullptr);
  if (deadline.hit)
    return ErrorAnswer(503, "the request ran past its time limit of " +
                                std::to_string(options.time_limit.count()) + " ms");
  return a;
}

// The one write: a silence from the deliveries page's form, on a read-write connection of its
// own (the daemon's writer may hold the lock for a moment: SQLite's busy timeout waits).
Answer AddSilenceFromRequest(const WebOptions& options, const std::string& body, Clock::time_point arrived,
                             const std::atomic<bool>& stopping) {
  // OpenReadOnly checks the file is a trainwatch store, without creating one.
  if (Result<std::unique_ptr<store::Db>> ours = store::OpenReadOnly(options.db_path); !ours.ok())
    return ErrorAnswer(503, "the store cannot be read: " + ours.status().message());
  Result<std::unique_ptr<store::Db>> db = store::Db::Open(options.db_path, store::Db::Mode::kReadWrite);
  if (!db.ok()) return ErrorAnswer(503, "the store cannot be written: " + db.status().message());
  Deadline deadline{arrived + options.time_limit, &stopping};
  sqlite3_progress_handler((*db)->raw(), kProgressSteps, CheckDeadline, &deadline);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  Answer a = AddSilenceFromJson(body, **db, now);
  sqlite3_progress_handler((*db)->raw(), 0, nullptr, nullptr);
  if (deadline.hit) return ErrorAnswer(503, "the request ran past its time limit");
  return a;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, WebServer::Impl& server) : stream_(std::move(socket)), server_(server) {}

  void Read() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(64 * 1024);
    stream_.expires_after(server_.options.idle_limit);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

 private:
  void OnRead(beast::error_code ec, size_t) {
    if (ec) return Close();
    request_ = parser_->release();
    const Clock::time_point arrived = Clock::now();
    std::optional<Target> target = ParseTarget(request_.target());
    const bool post = request_.method() == http::verb::post;
    if (request_.method() != http::verb::get && !post)
      return Send(ErrorAnswer(405, "only GET is served, and POST to /api/silences"));
    if (!target) return Send(ErrorAnswer(400, "the request target has a malformed percent escape"));

    const auto token_param = target->params.find("token");
    AccessRequest access;
    access.authorization = request_[http::field::authorization];
    access.cookie = request_[http::field::cookie];
    access.host = request_[http::field::host];
    if (token_param != target->params.end()) access.query_token = token_param->second;
    switch (Check(server_.options.token, access)) {
      case Access::kUnauthorized: return Send(ErrorAnswer(401, "a token is required"));
      case Access::kBadHost: return Send(ErrorAnswer(403, "the Host header must name loopback"));
      case Access::kAllowedSetCookie: set_cookie_ = true; break;
      case Access::kAllowed: break;
    }
    if (post) {
      if (target->path != "/api/silences") return Send(ErrorAnswer(405, "only /api/silences takes a POST"));
      const std::string why = CheckWriteOrigin(request_[http::field::content_type], request_[http::field::origin],
                                               request_["Sec-Fetch-Site"], request_[http::field::host]);
      if (!why.empty()) return Send(ErrorAnswer(403, why));
    } else if (!target->path.starts_with("/api/")) {
      // Pages and assets are the binary's own: no SQL, answered here.
      const StaticFile* file = FindStatic(target->path);
      if (!file) return Send(ErrorAnswer(404, "no such page: " + target->path));
      return SendStatic(*file);
    }

    // Admitted only under the cap: a request over it is answered here, without SQL.
    int n = server_.in_flight.load();
    do {
      if (n >= server_.options.max_concurrent)
        return Send(ErrorAnswer(503, "too many requests at once; try again"));
    } while (!server_.in_flight.compare_exchange_weak(n, n + 1));
    // The worker gets its own copy of what it reads: the session's members are the I/O thread's.
    std::optional<std::string> body;
    if (post) body = request_.body();
    asio::post(*server_.workers, [self = shared_from_this(), t = std::move(*target), body = std::move(body), arrived] {
      if (self->server_.options.on_admitted) self->server_.options.on_admitted();
      Answer a = body ? AddSilenceFromRequest(self->server_.options, *body, arrived, self->server_.stopping)
                     : AnswerFromStore(self->server_.options, t, arrived, self->server_.stopping);
      self->server_.in_flight.fetch_sub(1);
      asio::post(self->stream_.get_executor(), [self, a = std::move(a)]() mutable { self->Send(std::move(a)); });
    });
  }

  void Send(Answer a) {
    StartResponse(a.status, "application/json; charset=utf-8");
    response_.set(http::field::cache_control, "no-store");
    if (a.status == 401) response_.set(http::field::www_authenticate, "Bearer");
    response_.body() = json::serialize(a.body);
    Write();
  }

  // The page shell and assets: revalidated by ETag (they change only with the binary). The
  // shell's policy lets it run only its own scripts and styles and talk only to this server,
  // so a tag name that slipped into markup could still run nothing.
  void SendStatic(const StaticFile& file) {
    const bool unchanged = request_[http::field::if_none_match] == file.etag;
    StartResponse(unchanged ? 304 : 200, file.content_type);
    response_.set(http::field::cache_control, "no-cache");
    response_.set(http::field::etag, file.etag);
    if (file.page)
      response_.set("Content-Security-Policy",
                    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
    if (!unchanged) response_.body().assign(file.body);
    Write();
  }

  void StartResponse(unsigned status, std::string_view content_type) {
    response_ = {};
    response_.version(request_.version());
    response_.result(status);
    response_.set(http::field::server, "trainwatch");
    response_.set(http::field::content_type, content_type);
    response_.set("X-Content-Type-Options", "nosniff");
    response_.set("Referrer-Policy", "no-referrer");  // a ?token= link must not leak onwards
    if (set_cookie_) response_.set(http::field::set_cookie, TokenCookie(server_.options.token));
    set_cookie_ = false;
  }

  void Write() {
    response_.keep_alive(request_.keep_alive());
    response_.prepare_payload();
    stream_.expires_after(server_.options.idle_limit);
    http::async_write(stream_, response_, beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, size_t) {
    if (ec || !response_.keep_alive()) return Close();
    Read();
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  WebServer::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
  bool set_cookie_ = false;
};

}  // namespace

void WebServer::Impl::Accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (!acceptor.is_open()) return;  // stopped
    } else {
      std::make_shared<Session>(std::move(socket), *this)->Read();
    }
    Accept();
  });
}

WebServer::WebServer() = default;
WebServer::~WebServer() { Stop(); }

Status WebServer::Start(WebOptions options) {
  if (impl_) return Internal("the web server is already started");
  if (Status s = CheckListen(options.address, options.token); !s.ok()) return s;
  if (options.max_concurrent < 1) return InvalidArgument("max concurrent requests must be at least 1");
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(options.address == "localhost" ? "127.0.0.1" : options.address, ec);
  if (ec) return InvalidArgument("the web listen address '" + options.address + "' is no IP address");

  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  if (impl->options.role_patterns.empty()) impl->options.role_patterns = diagnose::EffectiveRolePatterns({});
  const tcp::endpoint endpoint(ip, impl->options.port);
  impl->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(endpoint, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return IoError("cannot listen on " + impl->options.address + ":" + std::to_string(impl->options.port) +
                   ": " + ec.message());
  impl->port = impl->acceptor.local_endpoint().port();
  impl->workers = std::make_unique<asio::thread_pool>(impl->options.max_concurrent);
  impl->Accept();
  Impl* raw = impl.get();
  impl->io_thread = std::thread([raw] {
    // A connection's failure ends that connection, never the server (exceptions at the edge).
    while (true) {
      try {
        raw->io.run();
        return;
      } catch (const std::exception&) {
      }
    }
  });
  impl_ = std::move(impl);
  return Status::Ok();
}

uint16_t WebServer::port() const { return impl_ ? impl_->port : 0; }

void WebServer::Stop() {
  if (!impl_) return;
  impl_->stopping = true;  // running queries stop at their next progress check
  asio::post(impl_->io, [impl = impl_.get()] {
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
  });
  // Queued requests are dropped (their connections close); running ones end at their next
  // progress check.
  impl_->workers->stop();
  impl_->workers->join();
  impl_->io.stop();
  if (impl_->io_thread.joinable()) impl_->io_thread.join();
  impl_.reset();
}

}  // namespace tw::web

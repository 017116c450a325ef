// A loopback HTTP(S) server for tests of notification delivery: it records every request and
// answers from a script (status, body, headers, a delay, or no answer at all). TLS uses a
// self-signed certificate made at construction, which is also its own CA (ca_file()).
//
// Serves on its own thread, every connection concurrently, one request per connection
// ("Connection: close"). Everything it waits on (accept, read, delay, write) is asynchronous
// on one io_context, so the destructor stops it at once, whatever a client is doing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tw::testing {

struct RecordedRequest {
  std::string method, target, body;
  std::map<std::string, std::string> headers;  // names lower-cased; the first of a name wins
  double time = 0;  // steady-clock seconds when the request was fully read
};

struct Reply {
  int status = 200;
  std::string body = "ok";
  std::vector<std::pair<std::string, std::string>> headers;
  double delay_seconds = 0;           // wait this long before answering (timeouts)
  bool close_without_answer = false;  // read the request, then close the connection
};

class HttpServer {
 public:
  // Binds 127.0.0.1:0 and serves on its own thread. With TLS, the certificate names
  // IP:127.0.0.1 and DNS:localhost.
  explicit HttpServer(bool tls = false);
  // TLS with a certificate for DNS:cert_host only (host-name mismatch tests).
  HttpServer(bool tls, std::string cert_host);
  ~HttpServer();  // stops and joins
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  std::string url(const std::string& target = "/hook") const;  // http(s)://127.0.0.1:PORT/target
  void Script(std::vector<Reply> replies);  // used in order, one per request; then the default
  void SetDefault(Reply r);                 // default: 200 "ok"
  // Asked first, for every request (on the server's thread, under its lock: it must not call
  // back into the server): a reply, or nullopt for the script's or the default. {} to remove.
  using Responder = std::function<std::optional<Reply>(const RecordedRequest&)>;
  void SetResponder(Responder f);
  std::vector<RecordedRequest> requests() const;                 // thread-safe copy
  bool WaitForRequests(size_t n, double timeout_seconds) const;  // true once n recorded
  const std::string& ca_file() const;  // TLS: PEM path of the self-signed cert; "" without TLS

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Steady-clock seconds, the clock of RecordedRequest::time.
double SteadySeconds();

}  // namespace tw::testing

#include "support/web_client.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <stdexcept>

namespace tw::testing {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

boost::json::value WebReply::Json() const { return boost::json::parse(body); }

WebReply WebRequest(uint16_t port, const std::string& method, const std::string& target, const WebHeaders& headers,
                    const std::string& body, const std::string& host) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  if (req.method() == http::verb::unknown) req.method_string(method);
  req.set(http::field::host, host.empty() ? "127.0.0.1:" + std::to_string(port) : host);
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty() || method == "POST") {
    req.body() = body;
    req.prepare_payload();
  }
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  beast::error_code failed;
  // Asynchronous only for the time limit: a tcp_stream times out its asynchronous operations.
  stream.expires_after(std::chrono::seconds(10));
  stream.async_connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), [&](beast::error_code ec) {
    if (ec) return void(failed = ec);
    http::async_write(stream, req, [&](beast::error_code ec, size_t) {
      if (ec) return void(failed = ec);
      http::async_read(stream, buf, res, [&](beast::error_code ec, size_t) { failed = ec; });
    });
  });
  io.run();
  if (failed) throw std::runtime_error(method + " " + target + ": " + failed.message());
  WebReply r;
  r.status = res.result_int();
  for (const auto& f : res) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  r.body = res.body();
  return r;
}

}  // namespace tw::testing

// HttpPost against a real loopback server (plain and TLS), and the URL parsing and redaction
// that keep webhook secrets out of logs.
#include "notify/http_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "support/http_server.h"

namespace tw::notify {
namespace {

using ::tw::testing::HttpServer;
using ::tw::testing::Reply;
using ::tw::testing::SteadySeconds;

// Designated initializers would do, but GCC 12 warns about the members they leave out.
Reply Answer(int status, std::string body, tw::notify::Headers headers = {}) {
  Reply r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

Reply Delayed(double seconds) {
  Reply r;
  r.delay_seconds = seconds;
  return r;
}

Reply Hangup() {
  Reply r;
  r.close_without_answer = true;
  return r;
}

Url MustParse(const std::string& url) {
  auto u = ParseUrl(url);
  EXPECT_TRUE(u.ok()) << u.status().ToString();
  return u.ok() ? *u : Url{};
}

// A loopback port nobody listens on: bound, read, and closed again.
uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(HttpClientUrl, ParsesGoodUrls) {
  struct Case {
    const char* url;
    const char* scheme;
    const char* host;
    const char* port;
    const char* target;
  };
  const Case cases[] = {
      {"https://hooks.slack.com/services/T0/B0/XYZ", "https", "hooks.slack.com", "443",
       "/services/T0/B0/XYZ"},
      {"http://127.0.0.1:8080/hook?token=abc", "http", "127.0.0.1", "8080", "/hook?token=abc"},
      {"http://h", "http", "h", "80", "/"},
      {"http://h?x=1", "http", "h", "80", "/?x=1"},
      {"HTTPS://Example.com:8443/a#frag", "https", "Example.com", "8443", "/a"},
      {"http://[::1]:9000/x", "http", "::1", "9000", "/x"},
      {"https://[2001:db8::1]/", "https", "2001:db8::1", "443", "/"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    auto u = ParseUrl(c.url);
    ASSERT_TRUE(u.ok()) << u.status().ToString();
    EXPECT_EQ(u->scheme, c.scheme);
    EXPECT_EQ(u->host, c.host);
    EXPECT_EQ(u->port, c.port);
    EXPECT_EQ(u->target, c.target);
  }
}

TEST(HttpClientUrl, RejectsBadUrlsWithoutEchoingThem) {
  struct Case {
    const char* url;
    const char* message_part;
  };
  const Case cases[] = {
      {"ftp://h/SECRET1", "scheme must be http or https"},
      {"hooks.slack.com/services/SECRET1", "scheme must be http or https"},
      {"", "scheme must be http or https"},
      {"http:///SECRET1", "no host"},
      {"https://:443/SECRET1", "no host"},
      {"http://h:0/SECRET1", "port is not a number in 1..65535"},
      {"http://h:65536/SECRET1", "port is not a number in 1..65535"},
      {"http://h:8x/SECRET1", "port is not a number in 1..65535"},
      {"http://h:/SECRET1", "port is not a number in 1..65535"},
      {"http://user:SECRET1@h/x", "user info"},
      {"http://h/SECRET1 x", "space or control"},
      {"http://h/SECRET1\r\nX-Evil: 1", "space or control"},
      {"http://[::1/SECRET1", "'['"},
      {"http://[::1]x/SECRET1", "after its host"},
      {"http://h$t/SECRET1", "host"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    auto u = ParseUrl(c.url);
    ASSERT_FALSE(u.ok());
    EXPECT_EQ(u.status().code(), Code::kInvalidArgument);
    EXPECT_NE(u.status().message().find(c.message_part), std::string::npos) << u.status().message();
    EXPECT_EQ(u.status().message().find("SECRET1"), std::string::npos) << u.status().message();
  }
}

TEST(HttpClientUrl, RedactsAllButTheFirstPathSegment) {
  const std::pair<const char*, const char*> cases[] = {
      {"https://hooks.slack.com/services/T0/B0/XYZ", "https://hooks.slack.com/services/…"},
      {"http://127.0.0.1:8080/hook?token=abc", "http://127.0.0.1:8080/hook…"},
      {"http://h/", "http://h/"},
      {"http://h", "http://h/"},
      {"http://h/hook", "http://h/hook"},
      {"http://h/hook#frag", "http://h/hook…"},
      {"http://h?token=abc", "http://h/…"},
      {"http://user:pw@h:81/a/b", "http://h:81/a/…"},
      {"HTTPS://[::1]:9000/a/b/c", "https://[::1]:9000/a/…"},
      {"ftp://h/a/b", "(unparseable URL)"},
      {"not a url", "(unparseable URL)"},
  };
  for (const auto& [url, want] : cases) EXPECT_EQ(RedactUrl(url), want) << url;
}

TEST(HttpClient, HeaderLookupIsCaseInsensitiveAndFirstWins) {
  HttpResponse r;
  r.headers = {{"Retry-After", "7"}, {"retry-after", "9"}, {"X-A", "b"}};
  EXPECT_EQ(r.Header("retry-after"), "7");
  EXPECT_EQ(r.Header("RETRY-AFTER"), "7");
  EXPECT_EQ(r.Header("x-a"), "b");
  EXPECT_EQ(r.Header("missing"), "");
}

TEST(HttpClient, PostsOverHttp) {
  HttpServer server;
  auto r =
      HttpPost(MustParse(server.url("/hook?x=1")),
               {{"Content-Type", "application/json"}, {"X-Custom", "abc"}}, R"({"text":"hi"})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok");
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].target, "/hook?x=1");
  EXPECT_EQ(reqs[0].body, R"({"text":"hi"})");
  EXPECT_EQ(reqs[0].headers["content-type"], "application/json");
  EXPECT_EQ(reqs[0].headers["x-custom"], "abc");
  EXPECT_EQ(reqs[0].headers["content-length"], "13");
  EXPECT_EQ(reqs[0].headers["host"], "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(reqs[0].headers["user-agent"], "trainwatch/0.1");
}

TEST(HttpClient, ScriptedRepliesInOrderThenTheDefault) {
  HttpServer server;
  server.Script({Answer(500, "boom")});
  server.SetDefault(Answer(204, ""));
  Url url = MustParse(server.url());
  auto first = HttpPost(url, {}, "a");
  auto second = HttpPost(url, {}, "b");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(first->status, 500);  // an answer, not an error
  EXPECT_EQ(first->body, "boom");
  EXPECT_EQ(second->status, 204);
  EXPECT_TRUE(server.WaitForRequests(2, 1));
  EXPECT_FALSE(server.WaitForRequests(3, 0.05));
}

TEST(HttpClient, TooManyRequestsKeepsRetryAfter) {
  HttpServer server;
  server.Script({Answer(429, "slow down", {{"Retry-After", "7"}})});
  auto r = HttpPost(MustParse(server.url()), {}, "x");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->Header("retry-after"), "7");
  EXPECT_EQ(r->Header("RETRY-AFTER"), "7");
  EXPECT_EQ(r->body, "slow down");
}

TEST(HttpClient, LongBodyIsCutNotAnError) {
  HttpServer server;
  server.SetDefault(Answer(200, std::string(5000, 'x')));
  HttpOptions options;
  options.max_body_bytes = 100;
  auto r = HttpPost(MustParse(server.url()), {}, "x", options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_LE(r->body.size(), 100u);
  EXPECT_EQ(r->Header("content-length"), "5000");
}

TEST(HttpClient, HttpsWithTheServersCaSucceeds) {
  HttpServer server(/*tls=*/true);
  ASSERT_FALSE(server.ca_file().empty());
  HttpOptions options;
  options.ca_file = server.ca_file();
  auto r = HttpPost(MustParse(server.url("/services/T0/B0")),
                    {{"Content-Type", "application/json"}}, "{}", options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok");
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].target, "/services/T0/B0");
  EXPECT_EQ(reqs[0].body, "{}");
}

TEST(HttpClient, HttpsWithSystemTrustRejectsTheSelfSignedCert) {
  HttpServer server(/*tls=*/true);
  auto r = HttpPost(MustParse(server.url()), {}, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kIo);
  EXPECT_NE(r.status().message().find("TLS handshake"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("certificate"), std::string::npos) << r.status().message();
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpClient, HttpsRejectsACertForAnotherHost) {
  HttpServer server(/*tls=*/true, "example.com");
  HttpOptions options;
  options.ca_file = server.ca_file();  // trusted, but for the wrong name
  auto r = HttpPost(MustParse(server.url()), {}, "x", options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("TLS handshake"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("certificate subject name"), std::string::npos)  // curl's words for it
      << r.status().message();
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpClient, HttpsByNameUsesSniAndChecksTheName) {
  HttpServer server(/*tls=*/true);  // DNS:localhost among the names
  HttpOptions options;
  options.ca_file = server.ca_file();
  auto r = HttpPost(MustParse("https://localhost:" + std::to_string(server.port()) + "/x"), {}, "x",
                    options);
  // localhost may resolve to ::1 first, where nothing listens; the IPv4 address must follow.
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
}

TEST(HttpClient, MissingCaFileIsAnError) {
  HttpServer server(/*tls=*/true);
  HttpOptions options;
  options.ca_file = "/nonexistent/ca.pem";
  auto r = HttpPost(MustParse(server.url()), {}, "x", options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/ca.pem"), std::string::npos)
      << r.status().message();
}

TEST(HttpClient, HeaderWithNewlineIsRefused) {
  HttpServer server;
  auto r =
      HttpPost(MustParse(server.url()), {{"Authorization", "Bearer SECRET1\r\nX-Evil: 1"}}, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message().find("SECRET1"), std::string::npos) << r.status().message();
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpClient, TimeoutDoesNotWaitForTheAnswer) {
  HttpServer server;
  server.Script({Delayed(3)});
  HttpOptions options;
  options.timeout_seconds = 0.5;
  double start = SteadySeconds();
  auto r = HttpPost(MustParse(server.url()), {}, "x", options);
  double took = SteadySeconds() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("read: timed out after 0.5 s"), std::string::npos)
      << r.status().message();
  EXPECT_GE(took, 0.4);
  EXPECT_LT(took, 2.5);
}

TEST(HttpClient, HttpsTimeoutDoesNotWaitForTheAnswer) {
  HttpServer server(/*tls=*/true);
  server.Script({Delayed(3)});
  HttpOptions options;
  options.timeout_seconds = 0.5;
  options.ca_file = server.ca_file();
  double start = SteadySeconds();
  auto r = HttpPost(MustParse(server.url()), {}, "x", options);
  double took = SteadySeconds() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("timed out"), std::string::npos) << r.status().message();
  EXPECT_LT(took, 2.5);
}

TEST(HttpClient, ClosedWithoutAnswerIsAReadError) {
  HttpServer server;
  server.Script({Hangup()});
  auto r = HttpPost(MustParse(server.url()), {}, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kIo);
  EXPECT_NE(r.status().message().find(": read: "), std::string::npos) << r.status().message();
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(HttpClient, ConnectionRefusedIsAConnectError) {
  uint16_t port = FreePort();
  auto r = HttpPost(MustParse("http://127.0.0.1:" + std::to_string(port) + "/hook"), {}, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(": connect: "), std::string::npos) << r.status().message();
}

TEST(HttpClient, ResolveFailureIsAResolveError) {
  HttpOptions options;
  options.timeout_seconds = 3;  // without DNS at all, the lookup may only time out: still resolve
  auto r = HttpPost(MustParse("http://nonexistent.invalid/hook"), {}, "x", options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(": resolve: "), std::string::npos) << r.status().message();
}

TEST(HttpClient, ErrorsNameTheRedactedUrlNotTheSecret) {
  HttpServer server;
  server.Script({Hangup()});
  std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/services/SECRET123";
  auto r = HttpPost(MustParse(url), {}, "x");
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_EQ(m.find("SECRET123"), std::string::npos) << m;
  EXPECT_EQ(m.rfind("http://127.0.0.1:" + std::to_string(server.port()) + "/services/…", 0), 0u)
      << m;

  uint16_t port = FreePort();
  auto refused = HttpPost(
      MustParse("http://127.0.0.1:" + std::to_string(port) + "/services/SECRET123?token=SECRET123"),
      {}, "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().find("SECRET123"), std::string::npos)
      << refused.status().message();
}

TEST(HttpServer, StopsPromptlyWithAClientMidRequest) {
  double start = SteadySeconds();
  {
    HttpServer server;
    server.SetDefault(Delayed(30));
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(server.port());
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::string req = "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx";
    ASSERT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
    EXPECT_TRUE(server.WaitForRequests(1, 5));
    ::close(fd);
  }  // the server is now waiting out a 30 s delay
  EXPECT_LT(SteadySeconds() - start, 5);
}

TEST(HttpServer, RemovesItsCaFile) {
  std::string path;
  {
    HttpServer server(/*tls=*/true);
    path = server.ca_file();
    ASSERT_EQ(::access(path.c_str(), R_OK), 0);
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace tw::notify

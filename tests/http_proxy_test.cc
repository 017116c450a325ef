// HTTP(S) through a forward proxy: a CONNECT tunnel that keeps TLS (and its verification) end
// to end, with Basic credentials where the proxy wants them; SOCKS 5 (with or without a user
// name and password, the name resolved here or by the proxy) and SOCKS 4; absolute-form requests
// for plain HTTP; and which proxy the environment names. Every proxy is a loopback server of
// the tests' own (support/connect_proxy.h, support/socks_proxy.h).
#include <gtest/gtest.h>

#include <cstdlib>

#include "app/config.h"
#include "notify/http_client.h"
#include "notify/render.h"
#include "support/connect_proxy.h"
#include "support/http_server.h"
#include "support/socks_proxy.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;

notify::Url Parse(const std::string& url) {
  auto u = notify::ParseUrl(url);
  EXPECT_TRUE(u.ok()) << url;
  return *u;
}

TEST(HttpProxy, HttpsGoesThroughAConnectTunnelAndStillVerifiesTheOrigin) {
  HttpServer server(true);
  ConnectProxy proxy;
  notify::HttpOptions o;
  o.ca_file = server.ca_file();
  o.proxy = proxy.url();
  auto r = notify::HttpPost(Parse(server.url("/services/T/B/secret")), {{"Content-Type", "text/plain"}}, "hi", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  ASSERT_TRUE(server.WaitForRequests(1, 5));
  EXPECT_EQ(server.requests()[0].target, "/services/T/B/secret");  // the path never reaches the proxy
  ASSERT_EQ(proxy.requests().size(), 1u);
  EXPECT_EQ(proxy.requests()[0], "CONNECT 127.0.0.1:" + std::to_string(server.port()) + " HTTP/1.1");

  // The tunnel does not weaken verification: a certificate for another host is still refused.
  HttpServer other(true, "elsewhere.example");
  o.ca_file = other.ca_file();
  auto bad = notify::HttpPost(Parse(other.url()), {}, "hi", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("TLS handshake"), std::string::npos) << bad.status().message();
}

TEST(HttpProxy, AProxyThatRefusesIsAnErrorNamingTheStepAndItsAnswer) {
  HttpServer server(true);
  ConnectProxy proxy(/*refuse=*/true);
  notify::HttpOptions o;
  o.ca_file = server.ca_file();
  o.proxy = proxy.url();
  auto r = notify::HttpPost(Parse(server.url("/services/T/B/secret")), {}, "hi", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("proxy CONNECT: the proxy answered 407"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find("secret"), std::string::npos) << r.status().message();
  EXPECT_EQ(server.requests().size(), 0u);
}

TEST(HttpProxy, CredentialsGoAsBasicAuthAndAWrongPasswordIsAClearErrorThatNeverShowsIt) {
  HttpServer server(true);
  ConnectProxy proxy(ConnectProxyOptions{.username = "tw", .password = "p@ss-SECRET"});
  notify::HttpOptions o;
  o.ca_file = server.ca_file();
  o.proxy = "http://tw:p%40ss-SECRET@" + proxy.host_port();  // '@' in a password is written %40
  auto r = notify::HttpPost(Parse(server.url("/services/T/B/x")), {}, "hi", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  ASSERT_EQ(proxy.authorizations().size(), 1u);
  EXPECT_EQ(proxy.authorizations()[0], "Basic " + notify::Base64("tw:p@ss-SECRET"));
  ASSERT_TRUE(server.WaitForRequests(1, 5));
  EXPECT_EQ(server.requests()[0].headers.count("proxy-authorization"), 0u);  // for the proxy only

  for (const std::string& wrong : {"http://tw:WRONG-pw@" + proxy.host_port(), proxy.url()}) {
    SCOPED_TRACE(wrong);
    o.proxy = wrong;
    auto refused = notify::HttpPost(Parse(server.url("/services/T/B/x")), {}, "hi", o);
    ASSERT_FALSE(refused.ok());
    const std::string& m = refused.status().message();
    EXPECT_NE(m.find("proxy CONNECT: the proxy answered 407 Proxy Authentication Required"), std::string::npos) << m;
    EXPECT_EQ(m.find("WRONG"), std::string::npos) << m;
    EXPECT_EQ(m.find(notify::Base64("tw:WRONG-pw")), std::string::npos) << m;
  }
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(HttpProxy, Socks5CarriesHttpsEndToEndTheNameResolvedHereOrByTheProxy) {
  HttpServer server(true);  // its certificate names 127.0.0.1 and localhost
  SocksProxy proxy;
  notify::HttpOptions o;
  o.ca_file = server.ca_file();
  o.proxy = proxy.url("socks5");
  auto r = notify::HttpPost(Parse("https://localhost:" + std::to_string(server.port()) + "/services/T/B/x"), {}, "hi", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  o.proxy = proxy.url("socks5h");
  r = notify::HttpPost(Parse("https://localhost:" + std::to_string(server.port()) + "/services/T/B/x"), {}, "hi", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<SocksRequest> asked = proxy.requests();
  ASSERT_EQ(asked.size(), 2u);
  // socks5: curl resolved localhost and asked for an address; socks5h: the proxy got the name.
  EXPECT_TRUE(asked[0].target == "127.0.0.1:" + std::to_string(server.port()) ||
              asked[0].target == "::1:" + std::to_string(server.port()))
      << asked[0].target;
  EXPECT_EQ(asked[1].target, "localhost:" + std::to_string(server.port()));
  ASSERT_TRUE(server.WaitForRequests(2, 5));
  EXPECT_EQ(server.requests()[1].target, "/services/T/B/x");

  // The tunnel does not weaken verification: a certificate for another host is still refused.
  HttpServer other(true, "elsewhere.example");
  o.ca_file = other.ca_file();
  auto bad = notify::HttpPost(Parse(other.url()), {}, "hi", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("TLS handshake"), std::string::npos) << bad.status().message();
}

TEST(HttpProxy, Socks5WithAUserNameAndPasswordAndTheirRefusal) {
  HttpServer server(true);
  SocksProxy proxy(SocksProxyOptions{.username = "tw", .password = "socks-SECRET"});
  notify::HttpOptions o;
  o.ca_file = server.ca_file();
  o.proxy = "socks5://tw:socks-SECRET@" + proxy.host_port();
  auto r = notify::HttpPost(Parse(server.url("/services/T/B/x")), {}, "hi", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  ASSERT_EQ(proxy.requests().size(), 1u);
  EXPECT_EQ(proxy.requests()[0].user, "tw");
  EXPECT_TRUE(proxy.requests()[0].granted);

  for (const std::string& wrong : {"socks5h://tw:WRONG-pw@" + proxy.host_port(), proxy.url("socks5")}) {
    SCOPED_TRACE(wrong);
    o.proxy = wrong;
    auto refused = notify::HttpPost(Parse(server.url("/services/T/B/x")), {}, "hi", o);
    ASSERT_FALSE(refused.ok());
    const std::string& m = refused.status().message();
    EXPECT_NE(m.find(": proxy " + proxy.url(wrong.substr(0, wrong.find(':')))), std::string::npos) << m;
    EXPECT_EQ(m.find("WRONG"), std::string::npos) << m;
    EXPECT_EQ(m.find("/T/B/x"), std::string::npos) << m;
  }
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(HttpProxy, Socks4AndSocks4a) {
  HttpServer server(true);
  SocksProxy proxy;
  notify::HttpOptions o;
  o.ca_file = server.ca_file();
  for (const char* scheme : {"socks4", "socks4a"}) {
    o.proxy = proxy.url(scheme);
    auto r = notify::HttpPost(Parse("https://localhost:" + std::to_string(server.port()) + "/x"), {}, "hi", o);
    ASSERT_TRUE(r.ok()) << scheme << ": " << r.status().ToString();
  }
  ASSERT_EQ(proxy.requests().size(), 2u);
  EXPECT_EQ(proxy.requests()[0].version, 4);
  EXPECT_EQ(proxy.requests()[0].target, "127.0.0.1:" + std::to_string(server.port()));  // SOCKS4: IPv4 only
  EXPECT_EQ(proxy.requests()[1].target, "localhost:" + std::to_string(server.port()));   // 4a: the proxy resolves
}

TEST(HttpProxy, PlainHttpIsSentToTheProxyInAbsoluteForm) {
  HttpServer proxy;  // records what a forwarding proxy would receive
  notify::HttpOptions o;
  o.proxy = proxy.url("");
  auto r = notify::HttpPost(Parse("http://relay.invalid:8080/hook?x=1"), {}, "hi", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();  // relay.invalid is never resolved: the proxy is
  ASSERT_TRUE(proxy.WaitForRequests(1, 5));
  EXPECT_EQ(proxy.requests()[0].target, "http://relay.invalid:8080/hook?x=1");
  EXPECT_EQ(proxy.requests()[0].headers.at("host"), "relay.invalid:8080");
}

TEST(HttpProxy, TheEnvironmentNamesTheProxyUnlessNoProxyOrLoopback) {
  for (const char* v : {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"}) unsetenv(v);
  const notify::Url slack = Parse("https://hooks.slack.com/services/T/B/X");
  EXPECT_EQ(notify::ProxyFromEnvironment(slack), "");
  setenv("HTTPS_PROXY", "proxy.corp:3128", 1);
  EXPECT_EQ(notify::ProxyFromEnvironment(slack), "http://proxy.corp:3128");
  setenv("https_proxy", "http://lower.corp:8080", 1);  // lower case wins, as in curl
  EXPECT_EQ(notify::ProxyFromEnvironment(slack), "http://lower.corp:8080");
  EXPECT_EQ(notify::ProxyFromEnvironment(Parse("http://relay.corp/hook")), "");  // http wants HTTP_PROXY
  setenv("HTTP_PROXY", "http://plain.corp:3128", 1);
  EXPECT_EQ(notify::ProxyFromEnvironment(Parse("http://relay.corp/hook")), "http://plain.corp:3128");
  EXPECT_EQ(notify::ProxyFromEnvironment(Parse("https://127.0.0.1:9/x")), "");  // loopback: direct
  setenv("NO_PROXY", "internal.example, .Slack.com", 1);
  EXPECT_EQ(notify::ProxyFromEnvironment(slack), "");
  EXPECT_EQ(notify::ProxyFromEnvironment(Parse("https://internal.example/x")), "");
  EXPECT_EQ(notify::ProxyFromEnvironment(Parse("https://notinternal.example/x")), "http://lower.corp:8080");
  setenv("NO_PROXY", "*", 1);
  EXPECT_EQ(notify::ProxyFromEnvironment(Parse("https://api.sendgrid.com/v3/mail/send")), "");
  for (const char* v : {"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"}) unsetenv(v);
}

TEST(HttpProxy, AChannelCanNameItsProxyOrNone) {
  TempDir dir;
  const std::string path = dir / "t.toml";
  WriteFile(path,
            "[[notify.channel]]\nname = \"a\"\ntype = \"webhook\"\nurl_env = \"TW_TEST_HOOK\"\n"
            "proxy = \"http://proxy.corp:3128\"\n"
            "[[notify.channel]]\nname = \"b\"\ntype = \"webhook\"\nurl_env = \"TW_TEST_HOOK\"\nproxy = \"\"\n"
            "[[notify.channel]]\nname = \"c\"\ntype = \"webhook\"\nurl_env = \"TW_TEST_HOOK\"\n");
  setenv("TW_TEST_HOOK", "https://hooks.example/x", 1);
  auto c = app::LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->channels[0].http.proxy, std::optional<std::string>("http://proxy.corp:3128"));
  EXPECT_EQ(c->channels[1].http.proxy, std::optional<std::string>(""));
  EXPECT_EQ(c->channels[2].http.proxy, std::nullopt);  // the environment decides
  WriteFile(path, "[[notify.channel]]\nname = \"a\"\ntype = \"webhook\"\nurl_env = \"TW_TEST_HOOK\"\n"
                  "proxy = \"socks5h://p:1080\"\n");
  auto socks = app::LoadConfigFile(path);
  ASSERT_TRUE(socks.ok()) << socks.status().ToString();
  EXPECT_EQ(socks->channels[0].http.proxy, std::optional<std::string>("socks5h://p:1080"));
  for (const auto& [proxy, why] : std::vector<std::pair<std::string, std::string>>{
           {"ftp://p:1080", "proxy scheme must be http, socks4, socks4a, socks5 or socks5h"},
           {"https://p:3128", "proxy scheme must be"},
           {"p:3128", "proxy must be a URL"},
           {"http://p:3128/path", "must not have a path"},
           {"http://u:SECRET%zz@p:3128", "'%' not followed by two hex digits"}}) {
    WriteFile(path, "[[notify.channel]]\nname = \"a\"\ntype = \"webhook\"\nurl_env = \"TW_TEST_HOOK\"\n"
                    "proxy = \"" + proxy + "\"\n");
    auto bad = app::LoadConfigFile(path);
    ASSERT_FALSE(bad.ok()) << proxy;
    EXPECT_NE(bad.status().message().find(path + ":5"), std::string::npos) << bad.status().message();
    EXPECT_NE(bad.status().message().find(why), std::string::npos) << bad.status().message();
    EXPECT_EQ(bad.status().message().find("SECRET"), std::string::npos) << bad.status().message();
  }
}

}  // namespace
}  // namespace tw

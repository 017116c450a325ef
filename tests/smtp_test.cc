// The email channel against a real SMTP server on loopback (aiosmtpd, support/smtp_server.h):
// STARTTLS and implicit TLS with verified certificates, AUTH PLAIN and LOGIN, several
// recipients, and the server's answers judged: 4xx retry, 5xx permanent, no answer retry.
// What arrives is read back by Python's email package, not by our own code. Skips, loudly,
// where /usr/bin/python3 has no aiosmtpd.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "notify/channel.h"
#include "notify/email.h"
#include "notify/email_channel.h"
#include "notify/render.h"
#include "notify/smtp.h"
#include "support/connect_proxy.h"
#include "support/smtp_server.h"
#include "support/socks_proxy.h"
#include "support/test_env.h"

namespace tw::notify {
namespace {

using testing::ReceivedMessage;
using testing::SmtpServerOptions;
using testing::SmtpTestServer;
using Tls = SmtpServerOptions::Tls;

Notification Finding() {
  Notification n = SampleNotification(1700000000);
  n.event = "finding.firing";
  n.title = "Loss is NaN or infinite";
  n.run = "exp/<b>bert</b>";
  n.cause = "An overflow in the <i>attention</i> logits";
  n.fix = "Lower the learning rate & clip gradients";
  return n;
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

// Listens and never accepts: connections complete in the kernel's backlog, and no greeting
// ever comes.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentServer() { ::close(fd_); }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// A fake SMTP server for what a real one would not do: it greets, then answers each line the
// client sends with the next scripted reply, sent whole (several replies at once, if so
// written), and closes after the last. One connection, on a thread of its own.
class ScriptedServer {
 public:
  ScriptedServer(std::string greeting, std::vector<std::string> replies)
      : greeting_(std::move(greeting)), replies_(std::move(replies)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 1), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    ::shutdown(fd_, SHUT_RDWR);  // ends a pending accept
    thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  void Serve() {
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    timeval tv{5, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    bool ok = ::send(c, greeting_.data(), greeting_.size(), MSG_NOSIGNAL) > 0;
    for (const std::string& reply : replies_) {
      char ch = 0;
      while (ok && (ok = ::recv(c, &ch, 1, 0) == 1) && ch != '\n') {
      }
      ok = ok && ::send(c, reply.data(), reply.size(), MSG_NOSIGNAL) > 0;
    }
    ::close(c);
  }

  std::string greeting_;
  std::vector<std::string> replies_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

// A message too small to matter, for tests of the conversation.
EmailMessage Tiny() { return {{"Subject: x"}, "x", "<p>x</p>"}; }

SmtpServer Plain(uint16_t port, SmtpSecurity security = SmtpSecurity::kNone) {
  SmtpServer s;
  s.host = "127.0.0.1";
  s.port = port;
  s.security = security;
  s.timeout_seconds = 5;
  return s;
}

TEST(SmtpClient, StartTlsRefusesWhatCameBeforeTheHandshake) {
  // A reply smuggled in after "220 go ahead" would be read as the encrypted server's.
  ScriptedServer server("220 fake ESMTP\r\n", {"250-fake\r\n250 STARTTLS\r\n", "220 go ahead\r\n250 injected\r\n"});
  Result<SmtpReply> r = SmtpSend(Plain(server.port(), SmtpSecurity::kStartTls), "a@example.com", {"b@example.com"}, Tiny());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kIo);
  EXPECT_NE(r.status().message().find("STARTTLS: the server sent more than its reply before the TLS handshake"),
            std::string::npos) << r.status().message();
}

TEST(SmtpClient, WhatIsNotSmtpIsAnErrorAndServerTextNeverCarriesThePassword) {
  {
    ScriptedServer http("HTTP/1.1 400 Bad Request\r\n", {});
    Result<SmtpReply> r = SmtpSend(Plain(http.port()), "a@example.com", {"b@example.com"}, Tiny());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("greeting: not an SMTP reply"), std::string::npos) << r.status().message();
  }
  // A server that echoes the credentials (base64 of "\0tw\0pw-SECRET", and the password).
  ScriptedServer echo("220 fake\r\n",
                      {"250-fake\r\n250 AUTH PLAIN\r\n", "535-5.7.8 no: AHR3AHB3LVNFQ1JFVA==\r\n535 5.7.8 pw-SECRET\r\n"});
  SmtpServer s = Plain(echo.port());
  s.username = "tw";
  s.password = "pw-SECRET";
  Result<SmtpReply> r = SmtpSend(s, "a@example.com", {"b@example.com"}, Tiny());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->code, 535);
  EXPECT_EQ(r->step, "AUTH PLAIN");
  EXPECT_EQ(r->text, "5.7.8 no: …\n5.7.8 …");
  EXPECT_EQ(JudgeSmtp(r).detail.find("SECRET"), std::string::npos);
}

class SmtpChannel : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!SmtpTestServer::Available(&why)) GTEST_SKIP() << "SKIPPED, NOT TESTED: " << why;
  }

  // An email channel for `server`: its port, its CA, STARTTLS unless said otherwise.
  static ChannelConfig Config(const SmtpTestServer& server, const std::string& tls = "starttls") {
    ChannelConfig c = ChannelConfig::Defaults("mail", "email");
    c.smtp_host = "127.0.0.1";
    c.smtp_port = server.port();
    c.tls = tls;
    c.from = "trainwatch <alerts@example.com>";
    c.to = {"ops@example.com", "Oncall <oncall@example.org>"};
    c.http.ca_file = server.ca_file();
    c.http.timeout_seconds = 10;
    return c;
  }

  static SendResult Send(const ChannelConfig& c, const std::string& key = "tw-41-mail") {
    Result<std::unique_ptr<Channel>> ch = MakeChannel(c);
    if (!ch.ok()) return {SendResult::Kind::kPermanent, 0, -1, "MakeChannel: " + ch.status().message()};
    return (*ch)->Send(Finding(), key, 1700000000);
  }

  static std::vector<ReceivedMessage> Received(const SmtpTestServer& server) { return server.messages(); }
};

TEST_F(SmtpChannel, StartTlsDeliversBothPartsWithEveryHeaderToEveryRecipient) {
  SmtpTestServer server({.tls = Tls::kStartTls});
  const SendResult r = Send(Config(server));
  ASSERT_EQ(r.kind, SendResult::Kind::kSent) << r.detail << "\n" << server.log();
  EXPECT_EQ(r.http_status, 250);
  EXPECT_NE(r.detail.find("end of data: 250 2.0.0 Accepted as msg-001"), std::string::npos) << r.detail;
  const std::vector<ReceivedMessage> got = Received(server);
  ASSERT_EQ(got.size(), 1u);
  const ReceivedMessage& m = got[0];
  EXPECT_TRUE(m.tls) << "STARTTLS was not used";
  EXPECT_FALSE(m.tls_version.empty());
  EXPECT_EQ(m.mail_from, "alerts@example.com");
  EXPECT_EQ(m.rcpt_tos, (std::vector<std::string>{"ops@example.com", "oncall@example.org"}));
  EXPECT_TRUE(m.defects.empty()) << m.defects.front() << "\n" << m.raw;
  EXPECT_EQ(m.Header("From"), "trainwatch <alerts@example.com>");
  EXPECT_EQ(m.Header("To"), "ops@example.com, Oncall <oncall@example.org>");
  EXPECT_EQ(m.Header("Subject"), "[trainwatch] CRITICAL Loss is NaN or infinite on exp/<b>bert</b>");
  EXPECT_EQ(m.Header("Message-ID"), MessageIdFor("tw-41-mail", "alerts@example.com"));
  EXPECT_EQ(m.Header("Date"), "Tue, 14 Nov 2023 22:13:20 +0000");
  EXPECT_EQ(m.content_type, "multipart/alternative");
  ASSERT_EQ(m.parts.size(), 2u) << m.raw;
  const auto& text = m.parts[0];
  const auto& html = m.parts[1];
  EXPECT_EQ(text.type, "text/plain");
  EXPECT_EQ(html.type, "text/html");
  for (const auto* part : {&text, &html}) {
    SCOPED_TRACE(part->text);
    EXPECT_EQ(part->charset, "utf-8");
    EXPECT_EQ(part->encoding, "quoted-printable");
    for (const char* fact : {"first_non_finite_step", "700", "█▇▆▅▄▄▃▃▃▂▂▂▂▂▁▁▁▁×", "Loss/train",
                             "Lower the learning rate", "attention"})
      EXPECT_NE(part->text.find(fact), std::string::npos) << fact;
  }
  EXPECT_NE(text.text.find("An overflow in the <i>attention</i> logits"), std::string::npos);
  EXPECT_NE(html.text.find("An overflow in the &lt;i&gt;attention&lt;/i&gt; logits"), std::string::npos);
  EXPECT_NE(html.text.find("exp/&lt;b&gt;bert&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.text.find("learning rate &amp; clip"), std::string::npos);
  EXPECT_EQ(html.text.find("<i>"), std::string::npos);
  size_t pos = 0;
  for (size_t end; (end = m.raw.find("\r\n", pos)) != std::string::npos; pos = end + 2)
    EXPECT_LE(end - pos, 998u);
}

TEST_F(SmtpChannel, ImplicitTlsWorksOnItsOwnPort) {
  SmtpTestServer server({.tls = Tls::kImplicit});
  const SendResult r = Send(Config(server, "tls"));
  ASSERT_EQ(r.kind, SendResult::Kind::kSent) << r.detail << "\n" << server.log();
  ASSERT_EQ(Received(server).size(), 1u);
  EXPECT_TRUE(Received(server)[0].tls);
  // The same server spoken to as STARTTLS: no greeting in plain text ever comes, only TLS.
  ChannelConfig c = Config(server, "starttls");
  c.http.timeout_seconds = 1;
  EXPECT_EQ(Send(c).kind, SendResult::Kind::kRetry);
  EXPECT_EQ(Received(server).size(), 1u);
}

TEST_F(SmtpChannel, AuthPlainCarriesTheCredentials) {
  SmtpTestServer server({.tls = Tls::kStartTls, .username = "tw", .password = "s3cret pass"});
  ChannelConfig c = Config(server);
  c.username = "tw";
  c.password = "s3cret pass";
  const SendResult r = Send(c);
  ASSERT_EQ(r.kind, SendResult::Kind::kSent) << r.detail << "\n" << server.log();
  ASSERT_EQ(Received(server).size(), 1u);
  EXPECT_EQ(Received(server)[0].auth_mechanism, "PLAIN");
  EXPECT_EQ(Received(server)[0].auth_login, "tw");
  EXPECT_EQ(Received(server)[0].auth_password, "s3cret pass");
  // Without credentials the server refuses MAIL: the AUTH above was what let it through.
  c.username = c.password = "";
  const SendResult anonymous = Send(c);
  EXPECT_EQ(anonymous.kind, SendResult::Kind::kPermanent) << anonymous.detail;
  EXPECT_NE(anonymous.detail.find("MAIL FROM: 530"), std::string::npos) << anonymous.detail;
}

TEST_F(SmtpChannel, AuthLoginWhereThatIsAllTheServerOffers) {
  SmtpTestServer server(
      {.tls = Tls::kStartTls, .username = "tw", .password = "pw-LOGIN", .exclude_mechanisms = {"PLAIN"}});
  ChannelConfig c = Config(server);
  c.username = "tw";
  c.password = "pw-LOGIN";
  const SendResult r = Send(c);
  ASSERT_EQ(r.kind, SendResult::Kind::kSent) << r.detail << "\n" << server.log();
  ASSERT_EQ(Received(server).size(), 1u);
  EXPECT_EQ(Received(server)[0].auth_mechanism, "LOGIN");
  EXPECT_EQ(Received(server)[0].auth_login, "tw");
  EXPECT_EQ(Received(server)[0].auth_password, "pw-LOGIN");
}

TEST_F(SmtpChannel, AWrongPasswordIsPermanentAndNeverShown) {
  SmtpTestServer server({.tls = Tls::kStartTls, .username = "tw", .password = "right"});
  ChannelConfig c = Config(server);
  c.username = "tw";
  c.password = "WRONG-hunter2";
  const SendResult r = Send(c);
  EXPECT_EQ(r.kind, SendResult::Kind::kPermanent) << r.detail;
  EXPECT_EQ(r.http_status, 535);
  EXPECT_NE(r.detail.find("AUTH PLAIN: 535"), std::string::npos) << r.detail;
  EXPECT_EQ(r.detail.find("hunter2"), std::string::npos) << r.detail;
  EXPECT_EQ(r.detail.find("V1JPTkct"), std::string::npos) << r.detail;  // nor its base64
  EXPECT_TRUE(Received(server).empty());
}

TEST_F(SmtpChannel, FourHundredsRetryFiveHundredsArePermanentAtRcptAndAtData) {
  struct Case {
    std::string rcpt, data;
    SendResult::Kind kind;
    int code;
    std::string step;
  };
  const Case cases[] = {
      {"451 4.3.0 Try again later", "", SendResult::Kind::kRetry, 451, "RCPT TO <ops@example.com>: 451"},
      {"550 5.1.1 No such user", "", SendResult::Kind::kPermanent, 550, "RCPT TO <ops@example.com>: 550"},
      {"", "451 4.3.0 Queue full", SendResult::Kind::kRetry, 451, "end of data: 451"},
      {"", "554 5.7.1 Rejected as spam", SendResult::Kind::kPermanent, 554, "end of data: 554"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.rcpt + k.data);
    SmtpTestServer server({.tls = Tls::kStartTls, .rcpt_reply = k.rcpt, .data_reply = k.data});
    const SendResult r = Send(Config(server));
    EXPECT_EQ(r.kind, k.kind) << r.detail;
    EXPECT_EQ(r.http_status, k.code);
    EXPECT_NE(r.detail.find(k.step), std::string::npos) << r.detail;
    EXPECT_TRUE(Received(server).empty());
  }
}

TEST_F(SmtpChannel, NoServerIsRetried) {
  ChannelConfig c = ChannelConfig::Defaults("mail", "email");
  c.smtp_host = "127.0.0.1";
  c.smtp_port = FreePort();
  c.from = "a@example.com";
  c.to = {"b@example.com"};
  const SendResult r = Send(c);
  EXPECT_EQ(r.kind, SendResult::Kind::kRetry);
  EXPECT_NE(r.detail.find("smtp://127.0.0.1:" + std::to_string(c.smtp_port) + ": connect: "), std::string::npos)
      << r.detail;
}

TEST_F(SmtpChannel, AServerThatNeverAnswersTimesOutAndIsRetried) {
  SilentServer silent;
  ChannelConfig c = ChannelConfig::Defaults("mail", "email");
  c.smtp_host = "127.0.0.1";
  c.smtp_port = silent.port();
  c.from = "a@example.com";
  c.to = {"b@example.com"};
  c.http.timeout_seconds = 0.5;
  const auto start = std::chrono::steady_clock::now();
  const SendResult r = Send(c);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.kind, SendResult::Kind::kRetry);
  EXPECT_NE(r.detail.find("greeting: timed out after 0.5 s"), std::string::npos) << r.detail;
  EXPECT_GE(took, 0.4);
  EXPECT_LT(took, 2.0);
}

TEST_F(SmtpChannel, ACertificateForAnotherHostOrFromNoTrustedCaIsRefused) {
  SmtpTestServer server({.tls = Tls::kStartTls, .cert_san = "DNS:mail.other.example"});
  const SendResult r = Send(Config(server));
  EXPECT_NE(r.kind, SendResult::Kind::kSent);
  EXPECT_NE(r.detail.find("STARTTLS: TLS handshake: "), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("certificate subject name"), std::string::npos) << r.detail;  // curl's words for it
  ChannelConfig untrusted = Config(server);
  untrusted.http.ca_file = "";  // the system's trust store has never heard of it
  const SendResult u = Send(untrusted);
  EXPECT_NE(u.kind, SendResult::Kind::kSent);
  EXPECT_NE(u.detail.find("certificate"), std::string::npos) << u.detail;
  EXPECT_TRUE(Received(server).empty());
}

TEST_F(SmtpChannel, StartTlsIsNeverSkippedWhereTheServerLacksIt) {
  SmtpTestServer server({.tls = Tls::kNone});
  const SendResult r = Send(Config(server));
  EXPECT_EQ(r.kind, SendResult::Kind::kPermanent) << r.detail;
  EXPECT_NE(r.detail.find("STARTTLS: the server does not offer STARTTLS"), std::string::npos) << r.detail;
  EXPECT_TRUE(Received(server).empty());
  // Plain text where asked for: a relay on this machine.
  const SendResult plain = Send(Config(server, "none"));
  ASSERT_EQ(plain.kind, SendResult::Kind::kSent) << plain.detail << "\n" << server.log();
  ASSERT_EQ(Received(server).size(), 1u);
  EXPECT_FALSE(Received(server)[0].tls);
}

TEST_F(SmtpChannel, WithAPasswordNothingIsSentWhereTheServerOffersNoAuth) {
  // curl would go on without AUTH; a channel given credentials means to authenticate.
  SmtpTestServer server({.tls = Tls::kNone});
  ChannelConfig c = Config(server, "none");
  c.username = "tw";
  c.password = "pw-SECRET";
  const SendResult r = Send(c);
  EXPECT_EQ(r.kind, SendResult::Kind::kPermanent) << r.detail;
  EXPECT_NE(r.detail.find("AUTH: the server offers no AUTH"), std::string::npos) << r.detail;
  EXPECT_TRUE(Received(server).empty());
}

TEST_F(SmtpChannel, AuthOverPlainTextOnlyOnLoopback) {
  SmtpTestServer server({.tls = Tls::kNone, .username = "tw", .password = "pw", .auth_over_plain_text = true});
  ChannelConfig c = Config(server, "none");
  c.username = "tw";
  c.password = "pw";
  const SendResult local = Send(c);
  ASSERT_EQ(local.kind, SendResult::Kind::kSent) << local.detail << "\n" << server.log();
  ASSERT_EQ(Received(server).size(), 1u);
  EXPECT_EQ(Received(server)[0].auth_login, "tw");
  // The client refuses by itself too, whatever built its configuration.
  SmtpServer remote{.host = "mail.example.com", .port = 25, .security = SmtpSecurity::kNone, .username = "tw",
                    .password = "pw"};
  Result<SmtpReply> refused = SmtpSend(remote, "a@example.com", {"b@example.com"}, Tiny());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("plain text"), std::string::npos) << refused.status().message();
}

TEST_F(SmtpChannel, ThroughAnHttpProxyWithCredentialsStartTlsStaysEndToEnd) {
  SmtpTestServer server({.tls = Tls::kStartTls});
  testing::ConnectProxy proxy(testing::ConnectProxyOptions{.username = "px", .password = "proxy-SECRET"});
  ChannelConfig c = Config(server);
  c.http.proxy = "http://px:proxy-SECRET@" + proxy.host_port();
  const SendResult r = Send(c);
  ASSERT_EQ(r.kind, SendResult::Kind::kSent) << r.detail << "\n" << server.log();
  ASSERT_EQ(Received(server).size(), 1u);
  EXPECT_TRUE(Received(server)[0].tls);
  ASSERT_EQ(proxy.requests().size(), 1u);
  EXPECT_EQ(proxy.requests()[0], "CONNECT 127.0.0.1:" + std::to_string(server.port()) + " HTTP/1.1");
  EXPECT_EQ(proxy.authorizations()[0], "Basic " + Base64("px:proxy-SECRET"));
  // A wrong password: the proxy refuses the tunnel. Retried (the proxy may come round), never shown.
  c.http.proxy = "http://px:WRONG-SECRET@" + proxy.host_port();
  const SendResult refused = Send(c);
  EXPECT_EQ(refused.kind, SendResult::Kind::kRetry);
  EXPECT_NE(refused.detail.find("proxy CONNECT: the proxy answered 407"), std::string::npos) << refused.detail;
  EXPECT_EQ(refused.detail.find("WRONG"), std::string::npos) << refused.detail;
  EXPECT_EQ(Received(server).size(), 1u);
}

TEST_F(SmtpChannel, ThroughASocks5ProxyThatResolvesTheNameWithAuthAndImplicitTls) {
  SmtpTestServer server({.tls = Tls::kImplicit, .username = "tw", .password = "smtp-pw"});
  testing::SocksProxy proxy(testing::SocksProxyOptions{.username = "px", .password = "socks-SECRET"});
  ChannelConfig c = Config(server, "tls");
  c.smtp_host = "localhost";  // resolved by the proxy (socks5h); the certificate names it
  c.username = "tw";
  c.password = "smtp-pw";
  c.http.proxy = "socks5h://px:socks-SECRET@" + proxy.host_port();
  const SendResult r = Send(c);
  ASSERT_EQ(r.kind, SendResult::Kind::kSent) << r.detail << "\n" << server.log();
  ASSERT_EQ(Received(server).size(), 1u);
  EXPECT_TRUE(Received(server)[0].tls);
  EXPECT_EQ(Received(server)[0].auth_login, "tw");
  ASSERT_EQ(proxy.requests().size(), 1u);
  EXPECT_EQ(proxy.requests()[0].target, "localhost:" + std::to_string(server.port()));
  EXPECT_EQ(proxy.requests()[0].user, "px");
}

TEST_F(SmtpChannel, MailIgnoresTheEnvironmentsProxies) {
  // curl would take these for an smtp:// URL by itself; the channel names its proxy or has none.
  SmtpTestServer server({.tls = Tls::kStartTls});
  const char* names[] = {"all_proxy", "ALL_PROXY", "smtp_proxy", "https_proxy", "HTTPS_PROXY"};
  for (const char* name : names) ::setenv(name, "socks5://127.0.0.1:1", 1);
  const SendResult r = Send(Config(server));
  for (const char* name : names) ::unsetenv(name);
  ASSERT_EQ(r.kind, SendResult::Kind::kSent) << r.detail << "\n" << server.log();
  EXPECT_EQ(Received(server).size(), 1u);
}

// `trainwatch notify test` builds channels with MakeChannel, from the config file: an email
// channel goes through it like any other, its password from the environment.
TEST_F(SmtpChannel, NotifyTestSendsThroughAConfiguredEmailChannel) {
  SmtpTestServer server({.tls = Tls::kStartTls, .username = "tw", .password = "env-pw"});
  testing::TempDir dir;
  testing::WriteFile(dir / "tw.toml",
                     "[[notify.channel]]\nname = \"mail\"\ntype = \"email\"\nsmtp_host = \"127.0.0.1\"\n"
                     "smtp_port = " + std::to_string(server.port()) + "\nusername = \"tw\"\n"
                     "password_env = \"TW_TEST_SMTP_PASSWORD\"\nfrom = \"alerts@example.com\"\n"
                     "to = [\"ops@example.com\"]\nca_file = \"" + server.ca_file() + "\"\n");
  std::string out;
  const int status = testing::RunCommand("TW_TEST_SMTP_PASSWORD=env-pw " + std::string(TW_CLI_BINARY) +
                                             " notify test --config " + (dir / "tw.toml") + " --channel mail",
                                         &out);
  EXPECT_EQ(status, 0) << out << "\n" << server.log();
  EXPECT_NE(out.find("mail (email, smtp://127.0.0.1:" + std::to_string(server.port()) + "): accepted: end of data: 250"),
            std::string::npos) << out;
  EXPECT_EQ(out.find("env-pw"), std::string::npos) << out;
  ASSERT_EQ(Received(server).size(), 1u);
  EXPECT_NE(Received(server)[0].Header("Subject").find("(test message)"), std::string::npos);
  EXPECT_EQ(Received(server)[0].auth_password, "env-pw");
}

}  // namespace
}  // namespace tw::notify

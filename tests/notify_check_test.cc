// `trainwatch notify check`: whether each channel's receiver (or proxy) can be reached from
// here, sending nothing. A connection blocked by the machine (EPERM: a systemd unit's
// IPAddressDeny=) cannot be made in a test without privileges; the other verdicts can.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "notify/reach.h"
#include "support/http_server.h"
#include "support/test_env.h"

namespace tw {
namespace {

using notify::Reachability;

// A loopback port nobody listens on (bound, then closed).
int ClosedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

notify::ChannelConfig Webhook(const std::string& url) {
  notify::ChannelConfig c = notify::ChannelConfig::Defaults("w", "webhook");
  c.url = url;
  c.http.proxy = "";  // not the environment's
  return c;
}

TEST(NotifyCheck, ReceiversAndProxiesAreReachedOrSayWhyNot) {
  testing::HttpServer server;
  const int closed = ClosedPort();
  Reachability r = notify::CheckReach(Webhook(server.url("/hook/SECRET")), 2);
  EXPECT_EQ(r.kind, Reachability::Kind::kReachable) << r.detail;
  EXPECT_EQ(r.endpoint.find("SECRET"), std::string::npos) << "the URL's path is no endpoint";

  r = notify::CheckReach(Webhook("http://127.0.0.1:" + std::to_string(closed) + "/hook"), 2);
  EXPECT_EQ(r.kind, Reachability::Kind::kRefused);
  EXPECT_EQ(r.endpoint, "127.0.0.1:" + std::to_string(closed));

  // A proxy is what the channel connects to: the receiver behind it is not tried.
  notify::ChannelConfig via = Webhook(server.url("/hook"));
  via.http.proxy = "http://user:pw@127.0.0.1:" + std::to_string(closed);
  r = notify::CheckReach(via, 2);
  EXPECT_EQ(r.kind, Reachability::Kind::kRefused);
  EXPECT_EQ(r.endpoint, "127.0.0.1:" + std::to_string(closed) + " (proxy)");

  notify::ChannelConfig mail = notify::ChannelConfig::Defaults("m", "email");
  mail.smtp_host = "127.0.0.1";
  mail.smtp_port = closed;
  EXPECT_EQ(notify::CheckReach(mail, 2).kind, Reachability::Kind::kRefused);
  EXPECT_EQ(notify::CheckReach(notify::ChannelConfig::Defaults("c", "console"), 2).kind,
            Reachability::Kind::kNoEndpoint);
}

TEST(NotifyCheck, TheCommandNamesEachChannelAndFailsWhenOneCannotBeReached) {
  testing::TempDir dir;
  testing::HttpServer server;
  const std::string config = dir / "tw.toml";
  const auto write = [&](const std::string& text) {
    testing::WriteFile(config, text);
    std::filesystem::permissions(config, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  };
  write("[[notify.channel]]\nname = \"up\"\ntype = \"webhook\"\nurl = \"" + server.url("/hook/SECRET") + "\"\n");
  std::string out;
  EXPECT_EQ(testing::RunCommand(std::string(TW_CLI_BINARY) + " notify check --config " + config + " 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("channel 'up': 127.0.0.1:"), std::string::npos) << out;
  EXPECT_NE(out.find("can be reached"), std::string::npos) << out;
  write("[[notify.channel]]\nname = \"up\"\ntype = \"webhook\"\nurl = \"" + server.url("/hook/SECRET") +
        "\"\n[[notify.channel]]\nname = \"down\"\ntype = \"webhook\"\nurl = \"http://127.0.0.1:" +
        std::to_string(ClosedPort()) + "/hook/SECRET\"\n");
  EXPECT_EQ(testing::RunCommand(std::string(TW_CLI_BINARY) + " notify check --config " + config + " 2>&1", &out), 1)
      << out;
  EXPECT_NE(out.find("trainwatch: channel 'down': 127.0.0.1:"), std::string::npos) << out;
  EXPECT_NE(out.find("refused the connection"), std::string::npos) << out;
  EXPECT_EQ(out.find("SECRET"), std::string::npos) << out;
}

}  // namespace
}  // namespace tw

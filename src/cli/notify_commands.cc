// `trainwatch notify test` and `trainwatch silence`: the CLI side of notifications.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "app/config.h"
#include "base/clock.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/format.h"
#include "notify/channel.h"
#include "notify/outbox.h"
#include "notify/reach.h"
#include "store/store.h"

namespace tw::cli {

namespace {

constexpr const char* kNotifyHelp = R"(usage: trainwatch notify test [--config FILE] [--channel NAME]
                             [--slack-webhook URL | --slack-webhook-file F]
                             [--webhook URL | --webhook-file F]
       trainwatch notify check [--config FILE] [--channel NAME] [--timeout SECONDS]

check: whether this process may connect to each channel's receiver (or its proxy), sending
nothing: a connection blocked on this machine (a systemd unit's IPAddressDeny=, a local
firewall), a host that does not resolve, refused or silent. The systemd unit runs it before the
daemon (ExecStartPre), so the journal says why notifications cannot leave. Exit status 0 when
every channel can be reached, 1 otherwise.

test:
Sends a sample finding (clearly marked as a test) to each channel, through the same code the
daemon uses (rendering, signing, HTTP(S) with verification), and prints what each receiver
answered. Channels come from the config file's [[notify.channel]] tables and the flags; with
neither, the console. Exit status 0 when every channel accepted the message, 1 otherwise.

options:
  --config FILE        the daemon's TOML config
  --channel NAME       only this configured channel
  --slack-webhook URL  a Slack incoming webhook (repeatable); argv shows it to every local
                       user: prefer --slack-webhook-file or $TRAINWATCH_SLACK_WEBHOOK
  --slack-webhook-file F  the same, the URL read from file F (mode 600)
  --webhook URL        a JSON webhook (repeatable)
  --webhook-file F     the same, the URL read from file F (mode 600)

environment: TRAINWATCH_SLACK_WEBHOOK, TRAINWATCH_WEBHOOK: a URL each, as the flags.
)";

constexpr const char* kSilenceHelp = R"(usage: trainwatch silence add --db FILE --run GLOB [--rule ID] --for DURATION [--comment TEXT]
       trainwatch silence list --db FILE [--all] [--format table|csv|json]
       trainwatch silence expire --db FILE ID

While a silence matches a finding (its run name matches GLOB, and its rule is ID when given),
no notification is queued for it. The daemon honours silences at once, without a restart.
DURATION is a number with s, m, h or d (30m, 2h, 7d).
)";

int NotifyTest(const Args& args) {
  Flags f(args, {"config", "channel", "slack-webhook", "webhook", "slack-webhook-file", "webhook-file"}, {"help"});
  if (f.Has("help")) return Usage(kNotifyHelp);
  if (!f.error().empty()) return Usage(kNotifyHelp, f.error());
  app::Config config;
  if (auto path = f.Get("config")) {
    Result<app::Config> loaded = app::LoadConfigFile(*path);
    if (!loaded.ok()) {
      std::cerr << "trainwatch: " << loaded.status().message() << "\n";
      return 78;
    }
    config = std::move(*loaded);
  }
  if (Status st = app::AddCommandLineChannels({f.GetAll("slack-webhook"), f.GetAll("slack-webhook-file"),
                                               f.GetAll("webhook"), f.GetAll("webhook-file")},
                                              &config);
      !st.ok())
    return Usage(kNotifyHelp, st.message());
  std::vector<notify::ChannelConfig> channels = app::EffectiveChannels(config);
  if (auto only = f.Get("channel")) {
    std::erase_if(channels, [&](const notify::ChannelConfig& c) { return c.name != *only; });
    if (channels.empty()) {
      std::cerr << "trainwatch: no channel named '" << *only << "'\n";
      return 2;
    }
  }
  int failures = 0;
  const double now = UnixNow();
  const notify::Notification sample = notify::SampleNotification(now);
  for (const auto& c : channels) {
    Result<std::unique_ptr<notify::Channel>> ch = notify::MakeChannel(c);
    if (!ch.ok()) {
      std::cout << c.name << ": " << ch.status().message() << "\n";
      failures++;
      continue;
    }
    const std::string id = "tw-test-" + std::to_string(static_cast<int64_t>(now * 1e6)) + "-" + c.name;
    notify::SendResult r = (*ch)->Send(sample, id, now);
    const char* verdict = r.kind == notify::SendResult::Kind::kSent        ? "accepted"
                          : r.kind == notify::SendResult::Kind::kRetry     ? "failed (would retry)"
                                                                           : "refused (permanent)";
    const std::string where = notify::Destination(c);
    std::cout << c.name << " (" << c.type << (where.empty() ? "" : ", " + where)
              << "): " << verdict << ": " << r.detail << "\n";
    if (r.kind != notify::SendResult::Kind::kSent) failures++;
  }
  return failures ? 1 : 0;
}

int SilenceAdd(const Flags& f) {
  if (!f.Has("run")) return Usage(kSilenceHelp, "silence add needs --run GLOB");
  double secs = 0;
  if (!f.Has("for") || !ParseDuration(*f.Get("for"), &secs))
    return Usage(kSilenceHelp, "silence add needs --for DURATION (like 30m, 2h, 7d)");
  Result<std::unique_ptr<store::Store>> st = store::Store::Open(*f.Get("db"));
  if (!st.ok()) {
    std::cerr << "trainwatch: " << st.status().message() << "\n";
    return 1;
  }
  const double now = UnixNow();
  Result<int64_t> id = notify::AddSilence(
      (*st)->db(), {*f.Get("run"), f.Get("rule").value_or(""), secs, f.Get("comment").value_or("")}, now);
  if (!id.ok()) {
    std::cerr << "trainwatch: silence add: " << id.status().message() << "\n";
    return 1;
  }
  std::cout << "silence " << *id << " added until "
            << static_cast<int64_t>(now + secs) << " (unix time)\n";
  return 0;
}

// A positive number of seconds ("3", "0.5").
bool ParseSeconds(const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && end && *end == '\0' && std::isfinite(*out);
}

int NotifyCheck(const Args& args) {
  Flags f(args, {"config", "channel", "timeout"}, {"help"});
  if (f.Has("help")) return Usage(kNotifyHelp);
  if (!f.error().empty()) return Usage(kNotifyHelp, f.error());
  double timeout = 3;
  if (auto t = f.Get("timeout"); t && (!ParseSeconds(*t, &timeout) || timeout <= 0 || timeout > 60))
    return Usage(kNotifyHelp, "--timeout must be a number of seconds in (0, 60]");
  app::Config config;
  if (auto path = f.Get("config")) {
    Result<app::Config> loaded = app::LoadConfigFile(*path);
    if (!loaded.ok()) {
      std::cerr << "trainwatch: " << loaded.status().message() << "\n";
      return 78;
    }
    config = std::move(*loaded);
  }
  std::vector<notify::ChannelConfig> channels = app::EffectiveChannels(config);
  if (auto only = f.Get("channel"))
    std::erase_if(channels, [&](const notify::ChannelConfig& c) { return c.name != *only; });
  int unreachable = 0;
  using Kind = notify::Reachability::Kind;
  for (const auto& c : channels) {
    const notify::Reachability r = notify::CheckReach(c, timeout);
    std::string line = "channel '" + c.name + "': ";
    switch (r.kind) {
      case Kind::kReachable: line += r.endpoint + " can be reached"; break;
      case Kind::kNoEndpoint: line += r.detail.empty() ? "sends nowhere over the network" : r.detail; break;
      case Kind::kBlocked:
        line += "connections to " + r.endpoint + " are blocked on this machine (" + r.detail +
                "): notifications cannot leave. Under systemd, trainwatch.service allows only "
                "loopback (IPAddressDeny=any, IPAddressAllow=localhost): add a drop-in that allows "
                "the receiver or your proxy (systemctl edit trainwatch; the example is "
                "share/trainwatch/network.conf, docs/daemon.md)";
        break;
      case Kind::kUnresolved: line += r.endpoint + ": " + r.detail; break;
      case Kind::kRefused: line += r.endpoint + " refused the connection (" + r.detail + ")"; break;
      case Kind::kTimedOut: line += r.endpoint + " did not answer within the timeout"; break;
    }
    const bool ok = r.kind == Kind::kReachable || r.kind == Kind::kNoEndpoint;
    unreachable += !ok;
    (ok ? std::cout : std::cerr) << (ok ? "" : "trainwatch: ") << line << "\n";
  }
  return unreachable ? 1 : 0;
}

}  // namespace

int CmdNotify(const Args& args) {
  if (args.empty() || args[0] == "--help") return Usage(kNotifyHelp, args.empty() ? "notify needs a subcommand" : "");
  if (args[0] == "check") return NotifyCheck(Args(args.begin() + 1, args.end()));
  if (args[0] != "test") return Usage(kNotifyHelp, "unknown notify subcommand '" + args[0] + "'");
  return NotifyTest(Args(args.begin() + 1, args.end()));
}

int CmdSilence(const Args& args) {
  if (args.empty() || args[0] == "--help") return Usage(kSilenceHelp, args.empty() ? "silence needs a subcommand" : "");
  const std::string sub = args[0];
  Flags f(Args(args.begin() + 1, args.end()), {"db", "run", "rule", "for", "comment", "format"}, {"all", "help"});
  if (!f.error().empty()) return Usage(kSilenceHelp, f.error());
  if (!f.Has("db")) return Usage(kSilenceHelp, "silence needs --db FILE");
  if (sub == "add") return SilenceAdd(f);
  if (sub != "list" && sub != "expire") return Usage(kSilenceHelp, "unknown silence subcommand '" + sub + "'");
  Result<std::unique_ptr<store::Store>> st = store::Store::Open(*f.Get("db"));
  if (!st.ok()) {
    std::cerr << "trainwatch: " << st.status().message() << "\n";
    return 1;
  }
  store::Db& db = (*st)->db();
  if (sub == "expire") {
    if (f.positionals().size() != 1) return Usage(kSilenceHelp, "silence expire needs one ID");
    Result<store::Stmt> u = db.Prepare("UPDATE silences SET expires = min(expires, ?2) WHERE silence_id = ?1");
    Status s = u.ok() ? u->Bind(1, static_cast<int64_t>(std::atoll(f.positionals()[0].c_str()))).Bind(2, UnixNow()).Run()
                      : u.status();
    if (!s.ok() || db.Changes() == 0) {
      std::cerr << "trainwatch: " << (s.ok() ? "no silence " + f.positionals()[0] : s.message()) << "\n";
      return 1;
    }
    std::cout << "silence " << f.positionals()[0] << " expired\n";
    return 0;
  }
  Format format = Format::kTable;
  if (auto fm = f.Get("format"); fm && !ParseFormat(*fm, &format))
    return Usage(kSilenceHelp, "--format must be table, csv or json");
  Result<store::Stmt> q = db.Prepare(
      std::string("SELECT silence_id AS id, run_glob AS run, rule, datetime(created, 'unixepoch') AS created, "
                  "datetime(expires, 'unixepoch') AS expires, expires > unixepoch() AS active, comment "
                  "FROM silences ") +
      (f.Has("all") ? "" : "WHERE expires > unixepoch() ") + "ORDER BY silence_id");
  if (!q.ok()) {
    std::cerr << "trainwatch: " << q.status().message() << "\n";
    return 1;
  }
  Result<int64_t> n = PrintRows(*q, format, std::cout);
  if (format == Format::kTable && n.ok() && *n == 0) std::cout << "no active silences\n";
  return n.ok() ? 0 : 1;
}

}  // namespace tw::cli

// Issue 14, hostile inputs and faults, at the store and at delivery, with real processes: the
// real `trainwatch` binary, real SQLite files locked, corrupted and mounted read-only, real
// HTTP receivers on 127.0.0.1 that echo what they should not.
//   - a write lock held on the store over the daemon's start delays delivery, never disables it;
//   - a second daemon on one store is refused (and a kill -9 leaves no lock behind);
//   - two processes creating one new store at once both succeed, with one schema;
//   - a corrupt store and a read-only one each get their own message and exit status;
//   - no configured secret (URLs, signing secrets, tokens, API and routing keys, of every type
//     of channel) reaches the log, the outbox, `status`, `notify test` or argv.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <latch>
#include <thread>

#include "notify/channel.h"
#include "notify/secrets.h"
#include "store/db.h"
#include "store/migrations.h"
#include "store/store.h"
#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/http_server.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using testing::ShellQuote;

using namespace std::chrono_literals;
using testing::DaemonProcess;
using testing::EventFileWriter;
using testing::QueryInt;
using testing::TempDir;
using testing::WaitFor;
namespace fs = std::filesystem;

constexpr double kWall0 = 1.7e9;

std::string Cli() { return fs::absolute(TW_CLI_BINARY).native(); }

// A run whose loss is finite for 300 steps, then NaN: non_finite_loss fires on it.
void WriteSickRun(const std::string& dir) {
  EventFileWriter w(dir + "/" + testing::EventFileName(1700000000, "h", 1, 0));
  w.Add(testing::FileVersionEvent(kWall0));
  for (int64_t s = 0; s < 340; ++s) {
    const double v = s < 300 ? 0.3 + 2.0 * std::pow(1 + s / 200.0, -0.7) : NAN;
    w.Add(testing::SimpleScalarEvent("Loss/train", s, kWall0 + s, static_cast<float>(v)));
  }
  w.Flush();
}

void WriteOwnerOnly(const std::string& path, const std::string& text) {
  testing::WriteFile(path, text);
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
}

std::string StatusOf(const std::string& db, int* rc = nullptr, const std::string& flags = "") {
  std::string out;
  const int r = testing::RunCommand(Cli() + " status " + flags + " --db " + ShellQuote(db) + " 2>&1", &out);
  if (rc) *rc = r;
  return out;
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) n++;
  return n;
}

int ExitStatus(std::optional<int> wait_status) {
  return wait_status && WIFEXITED(*wait_status) ? WEXITSTATUS(*wait_status) : -1;
}

// A store made by the real binary and closed cleanly (no -wal or -shm left).
void MakeStore(const std::string& db) {
  std::string out;
  ASSERT_EQ(testing::RunCommand(Cli() + " silence list --db " + ShellQuote(db) + " 2>&1", &out), 0) << out;
}

// One webhook channel (no grouping: each message as it comes) to `url`.
std::string WebhookConfig(const TempDir& dir, const std::string& url) {
  const std::string config = dir / "trainwatch.toml";
  WriteOwnerOnly(config, "[[notify.channel]]\nname = \"hook\"\ntype = \"webhook\"\nurl = \"" + url + "\"\n");
  return config;
}

// ---------------------------------------------------------------------------------------------
// 1. A write lock on the store over the daemon's start.

TEST(HostileStoreNotify, AStoreLockedAtStartDelaysDeliveryAndStatusShowsTheWait) {
  TempDir dir;
  testing::HttpServer hook;
  const std::string db = dir / "tw.db";
  MakeStore(db);
  WriteSickRun(dir / "logs/sick");
  // Another process's write transaction (a backup, a long script): SQLite's busy timeout (5 s)
  // runs out for every writer of the daemon while it lasts.
  auto holder = store::Db::Open(db, store::Db::Mode::kReadWrite);
  ASSERT_TRUE(holder.ok()) << holder.status().ToString();
  ASSERT_TRUE((*holder)->Exec("BEGIN EXCLUSIVE").ok());
  DaemonProcess d({"--config", WebhookConfig(dir, hook.url("/hook")), "--logdir", dir / "logs", "--db", db,
                   "--rescan-interval", "1"},
                  dir / "daemon.log");
  // status shows the wait while it lasts, and the retries go on (the second one's backoff).
  std::string out;
  ASSERT_TRUE(WaitFor([&] {
    out = StatusOf(db);
    return out.find("waiting:     notify: cannot open the outbox") != std::string::npos &&
           out.find("database is locked") != std::string::npos && out.find("retrying in 2 s") != std::string::npos;
  }, 40s)) << out << d.Log();
  EXPECT_EQ(hook.requests().size(), 0u);
  (void)(*holder)->Exec("ROLLBACK");
  holder->reset();

  ASSERT_TRUE(hook.WaitForRequests(1, 40)) << d.Log();
  boost::json::value body = boost::json::parse(hook.requests()[0].body);
  EXPECT_EQ(body.at("type").as_string(), "finding.firing");
  EXPECT_EQ(body.at("finding").at("rule").as_string(), "non_finite_loss");
  ASSERT_TRUE(WaitFor([&] { return StatusOf(db).find("waiting:") == std::string::npos; }, 10s)) << StatusOf(db);
  EXPECT_NE(StatusOf(db).find("notify:      hook: 1 sent, 0 pending, 0 dead"), std::string::npos) << StatusOf(db);
  // Said once while it lasted (not once per try), and once when it ended.
  EXPECT_EQ(Count(d.Log(), "notify: cannot open the outbox"), 1u) << d.Log();
  EXPECT_NE(d.Log().find("notify: delivering again after"), std::string::npos) << d.Log();
  EXPECT_EQ(d.Log().find("delivery disabled"), std::string::npos) << d.Log();
  d.Signal(SIGTERM);
  EXPECT_EQ(ExitStatus(d.Wait(10s)), 0) << d.Log();
}

// ---------------------------------------------------------------------------------------------
// 2. One daemon per store.

TEST(HostileStoreNotify, ASecondDaemonOnOneStoreIsRefusedAndEachMessageGoesOnce) {
  TempDir dir;
  testing::HttpServer hook;
  const std::string db = dir / "tw.db";
  fs::create_directories(dir / "logs");
  const std::vector<std::string> args = {"--config", WebhookConfig(dir, hook.url("/hook")), "--logdir",
                                         dir / "logs", "--db", db, "--rescan-interval", "1"};
  DaemonProcess first(args, dir / "first.log");
  ASSERT_TRUE(first.WaitForLog("notify: delivering to hook", 10s)) << first.Log();
  DaemonProcess second(args, dir / "second.log");
  EXPECT_EQ(ExitStatus(second.Wait(10s)), 75) << second.Log();
  EXPECT_NE(second.Log().find("another trainwatch daemon (pid " + std::to_string(first.pid()) + ") is using the store"),
            std::string::npos) << second.Log();
  EXPECT_TRUE(WaitFor([&] { return StatusOf(db).find("(pid " + std::to_string(first.pid()) + ")") != std::string::npos; },
                      10s)) << StatusOf(db);

  WriteSickRun(dir / "logs/sick");
  ASSERT_TRUE(hook.WaitForRequests(1, 30)) << first.Log();
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM outbox WHERE state = 'sent'") >= 1; }, 10s));
  std::this_thread::sleep_for(1500ms);  // a second deliverer would have sent its copy by now
  EXPECT_EQ(static_cast<int64_t>(hook.requests().size()),
            QueryInt(db, "SELECT count(*) FROM outbox WHERE state = 'sent'"));

  // The lock dies with its holder, however it dies: a kill -9 never blocks the next start.
  first.KillAndReap();
  EXPECT_NE(StatusOf(db).find("not running now"), std::string::npos) << StatusOf(db);
  DaemonProcess third(args, dir / "third.log");
  ASSERT_TRUE(third.WaitForLog("notify: delivering to hook", 10s)) << third.Log();
  third.Signal(SIGTERM);
  EXPECT_EQ(ExitStatus(third.Wait(10s)), 0) << third.Log();
}

// ---------------------------------------------------------------------------------------------
// 3. Two processes creating one new store at once.

TEST(HostileStoreNotify, TwoProcessesCreatingOneNewStoreBothSucceedWithOneSchema) {
  TempDir dir;
  for (int i = 0; i < 20; ++i) {
    const std::string db = dir / ("race" + std::to_string(i) + ".db");
    testing::ChildProcess::Options o;
    o.stderr_path = dir / ("race" + std::to_string(i) + ".err");
    std::vector<testing::ChildProcess> children;
    for (int p = 0; p < 2; ++p) children.emplace_back(std::vector<std::string>{Cli(), "silence", "list", "--db", db}, o);
    for (auto& c : children)
      EXPECT_EQ(ExitStatus(c.Wait(30s)), 0) << "try " << i << ": " << testing::ReadFile(o.stderr_path);
    EXPECT_EQ(QueryInt(db, "PRAGMA user_version"), store::LatestSchemaVersion()) << "try " << i;
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM meta WHERE key = 'application'"), 1) << "try " << i;
  }
}

TEST(HostileStoreNotify, ThreadsCreatingOneNewStoreOnSeparateConnectionsAllSucceed) {
  TempDir dir;
  for (int i = 0; i < 20; ++i) {
    const std::string db = dir / ("race" + std::to_string(i) + ".db");
    constexpr int kThreads = 4;
    std::latch go(kThreads);
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        go.arrive_and_wait();
        auto s = store::Store::Open(db);
        if (!s.ok()) errors[t] = s.status().ToString();
      });
    for (auto& t : threads) t.join();
    for (const auto& e : errors) EXPECT_EQ(e, "") << "try " << i;
    EXPECT_EQ(QueryInt(db, "PRAGMA user_version"), store::LatestSchemaVersion()) << "try " << i;
  }
}

// ---------------------------------------------------------------------------------------------
// 4. A corrupt store, a read-only store.

// Overwrites `bytes` bytes at `offset` of `path` with a pattern no SQLite page holds.
void Clobber(const std::string& path, int64_t offset, size_t bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good()) << path;
  f.seekp(offset);
  const std::string junk(bytes, '\xA5');
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  ASSERT_TRUE(f.good());
}

TEST(HostileStoreNotify, ACorruptStoreIsNamedCorruptByStatusQueryAndTheDaemonWhichStops) {
  TempDir dir;
  const std::string db = dir / "tw.db";
  MakeStore(db);
  Clobber(db, 100, 3900);  // page 1 past the file header: the schema's b-tree
  int rc = 0;
  std::string out = StatusOf(db, &rc);
  EXPECT_EQ(rc, 65) << out;
  EXPECT_NE(out.find("the store is corrupt"), std::string::npos) << out;
  EXPECT_EQ(out.find("not a trainwatch database"), std::string::npos) << out;
  rc = testing::RunCommand(Cli() + " query --db " + ShellQuote(db) + " 'SELECT 1' 2>&1", &out);
  EXPECT_EQ(rc, 65) << out;
  EXPECT_NE(out.find("the store is corrupt"), std::string::npos) << out;

  fs::create_directories(dir / "logs");
  DaemonProcess d({"--logdir", dir / "logs", "--db", db}, dir / "daemon.log");
  EXPECT_EQ(ExitStatus(d.Wait(20s)), 65) << d.Log();
  EXPECT_NE(d.Log().find("the store is corrupt"), std::string::npos) << d.Log();
  EXPECT_NE(d.Log().find("restore it from a backup"), std::string::npos) << d.Log();
}

TEST(HostileStoreNotify, ADaemonWhoseStoreTurnsOutCorruptWhileWritingStopsInsteadOfRetrying) {
  TempDir dir;
  const std::string db = dir / "tw.db";
  MakeStore(db);
  int64_t page = 0, root = 0;
  {
    auto c = store::OpenReadOnly(db);
    ASSERT_TRUE(c.ok());
    auto s = (*c)->Prepare("SELECT (SELECT page_size FROM pragma_page_size), "
                           "(SELECT rootpage FROM sqlite_master WHERE name = 'scalars')");
    ASSERT_TRUE(s.ok() && s->Step().ok());
    page = s->Int(0);
    root = s->Int(1);
  }
  ASSERT_GT(root, 1);
  Clobber(db, (root - 1) * page, static_cast<size_t>(page));  // the schema reads fine; the points do not
  WriteSickRun(dir / "logs/sick");
  DaemonProcess d({"--logdir", dir / "logs", "--db", db, "--rescan-interval", "1"}, dir / "daemon.log");
  EXPECT_EQ(ExitStatus(d.Wait(30s)), 65) << d.Log();
  EXPECT_NE(d.Log().find("the store cannot be written any more, stopping"), std::string::npos) << d.Log();
  EXPECT_EQ(d.Log().find("will retry at the next rescan"), std::string::npos) << d.Log();
}

// Runs `command` with `dir` bind-mounted read-only over itself, in a user and mount namespace
// of its own (no privileges needed, nothing outside changes). -1 when that is not possible here.
int RunOnReadOnlyMount(const std::string& dir, const std::string& command, std::string* out) {
  if (testing::RunCommand("unshare -rm true 2>/dev/null") != 0) return -1;
  const std::string script =
      "mount --bind " + ShellQuote(dir) + " " + ShellQuote(dir) + " && mount -o remount,bind,ro " + ShellQuote(dir) + " || exit 200; " + command;
  const int rc = testing::RunCommand("unshare -rm sh -c " + ShellQuote(script) + " 2>&1", out);
  return rc == 200 ? -1 : rc;
}

TEST(HostileStoreNotify, AStoreOnAReadOnlyMountIsReadByStatusAndQueryAndRefusedByTheDaemon) {
  TempDir dir;
  const std::string store_dir = dir / "store";
  fs::create_directories(store_dir);
  const std::string db = store_dir + "/tw.db";
  WriteSickRun(dir / "logs/sick");
  std::string out;
  ASSERT_EQ(testing::RunCommand(Cli() + " ingest --quiet --db " + ShellQuote(db) + " " + ShellQuote(dir / "logs") + " 2>&1", &out), 0)
      << out;
  int rc = RunOnReadOnlyMount(store_dir, Cli() + " status --db " + ShellQuote(db), &out);
  if (rc == -1) GTEST_SKIP() << "no user namespaces here to mount a directory read-only: " << out;
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("runs:        1 (1 series, 340 scalar points)"), std::string::npos) << out;
  EXPECT_EQ(out.find("not a trainwatch database"), std::string::npos) << out;
  rc = RunOnReadOnlyMount(store_dir, Cli() + " query --format csv --db " + ShellQuote(db) + " 'SELECT count(*) FROM scalars'",
                          &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("340"), std::string::npos) << out;
  rc = RunOnReadOnlyMount(store_dir, Cli() + " daemon --logdir " + ShellQuote(dir / "logs") + " --db " + ShellQuote(db), &out);
  EXPECT_EQ(rc, 73) << out;
  EXPECT_NE(out.find("read-only file system"), std::string::npos) << out;
  EXPECT_EQ(out.find("configuration error"), std::string::npos) << out;
}

TEST(HostileStoreNotify, AReadOnlyStoreFileIsRefusedByTheDaemonWithItsOwnStatus) {
  if (::geteuid() == 0) {
    // Root writes a 0444 file anyway; run the daemon as nobody instead, where setpriv exists.
    if (testing::RunCommand("command -v setpriv >/dev/null") != 0) GTEST_SKIP() << "root, and no setpriv";
  }
  TempDir dir;
  const std::string db = dir / "tw.db";
  MakeStore(db);
  fs::create_directories(dir / "logs");
  fs::permissions(dir.path(), fs::perms::all);  // the daemon (nobody) may create its lock file
  fs::permissions(dir / "logs", fs::perms::all);
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string as_nobody = ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  std::string out;
  const int rc = testing::RunCommand(as_nobody + Cli() + " daemon --logdir " + ShellQuote(dir / "logs") + " --db " + ShellQuote(db) +
                                         " 2>&1",
                                     &out);
  if (rc != 73 && out.find("Permission denied") != std::string::npos && out.find(TW_CLI_BINARY) != std::string::npos)
    GTEST_SKIP() << "nobody cannot run the test binary here: " << out;
  EXPECT_EQ(rc, 73) << out;
  EXPECT_NE(out.find("the store is read-only"), std::string::npos) << out;
}

// ---------------------------------------------------------------------------------------------
// 5. Secrets.

TEST(HostileStoreNotify, ScrubbingHidesEverySecretPieceButKeepsTheMessage) {
  notify::ChannelConfig slack = notify::ChannelConfig::Defaults("s", "slack");
  slack.url = "https://hooks.slack.com/services/T0AAAA/B0BBBB/xoxCCCCCCCC";
  const std::vector<std::string> secrets = notify::ChannelSecrets(slack);
  const std::string scrubbed = notify::ScrubSecrets(
      "HTTP 404 no_such_hook https://hooks.slack.com/services/T0AAAA/B0BBBB/xoxCCCCCCCC "
      "{\"path\":\"\\/services\\/T0AAAA\\/B0BBBB\\/xoxCCCCCCCC\",\"token\":\"xoxCCCCCCCC\"}",
      secrets);
  for (const char* s : {"T0AAAA", "B0BBBB", "xoxCCCCCCCC"}) EXPECT_EQ(scrubbed.find(s), std::string::npos) << scrubbed;
  EXPECT_NE(scrubbed.find("HTTP 404 no_such_hook https://hooks.slack.com/services/…"), std::string::npos) << scrubbed;

  notify::ChannelConfig ntfy = notify::ChannelConfig::Defaults("n", "ntfy");
  ntfy.url = "https://ntfy.sh/tw-alerts-7f3k";
  ntfy.secret = "tk_abcdef";
  EXPECT_EQ(notify::Destination(ntfy), "https://ntfy.sh/…");
  EXPECT_EQ(notify::ScrubSecrets("topic tw-alerts-7f3k, Bearer tk_abcdef", notify::ChannelSecrets(ntfy)),
            "topic …, Bearer …");
}

// A receiver that refuses, echoing `echo` in its answer (as some proxies and test servers
// echo the request).
void Echo(testing::HttpServer& s, int status, const std::string& echo) {
  s.SetDefault({status, "refused: you sent " + echo});
}

TEST(HostileStoreNotify, NoSecretReachesTheLogTheOutboxStatusOrArgv) {
  TempDir dir;
  testing::HttpServer slack, hook, ntfy, sendgrid, filed, telegram, teams, pagerduty;
  const std::string slack_url = slack.url("/services/T0SLACKSECRET/B0SLACKSECRET/xoxSLACKTOKEN123");
  const std::string hook_url = hook.url("/hook/WHPATHSECRET987?token=WHQUERYSECRET");
  const std::string hook_secret = "SIGNSECRET-abc123";
  const std::string ntfy_url = ntfy.url("/tw-topic-SECRET42");
  const std::string ntfy_token = "tk_NTFYTOKEN777";
  const std::string api_key = "SG.SENDGRIDKEY.999";
  const std::string filed_url = filed.url("/hook/FILEDSECRET31");
  const std::string bot_token = "123456789:TGTOKENSECRETabc";
  const std::string teams_url = teams.url("/workflows/W1/triggers/manual/paths/invoke?api-version=1&sig=TEAMSSIGSECRET");
  const std::string routing_key = "PDROUTINGKEYSECRET0123456789abcd";
  Echo(filed, 404, filed_url);
  Echo(slack, 400, slack_url);  // permanent: dead, with its reply kept
  Echo(hook, 500, hook_url + " key=" + hook_secret + " json={\"url\":\"" + [&] {
    std::string escaped;
    for (char c : hook_url) escaped += c == '/' ? std::string("\\/") : std::string(1, c);
    return escaped;
  }() + "\"}");  // retried: pending, with its reply kept and logged
  Echo(ntfy, 401, "Authorization: Bearer " + ntfy_token + " for topic tw-topic-SECRET42");
  Echo(sendgrid, 403, "The provided authorization grant is invalid: Bearer " + api_key);
  Echo(telegram, 401, "POST /bot" + bot_token + "/sendMessage");
  Echo(teams, 400, teams_url);
  Echo(pagerduty, 400, "{\"routing_key\":\"" + routing_key + "\"}");
  const std::string config = dir / "trainwatch.toml";
  WriteOwnerOnly(config,
                 "[[notify.channel]]\nname = \"slack\"\ntype = \"slack\"\nurl = \"" + slack_url +
                     "\"\ngroup_wait_seconds = 0\n"
                     "[[notify.channel]]\nname = \"hook\"\ntype = \"webhook\"\nurl = \"" + hook_url + "\"\nsecret = \"" +
                     hook_secret + "\"\n"
                     "[[notify.channel]]\nname = \"ntfy\"\ntype = \"ntfy\"\nurl = \"" + ntfy_url + "\"\nsecret = \"" +
                     ntfy_token + "\"\ngroup_wait_seconds = 0\n"
                     "[[notify.channel]]\nname = \"mail\"\ntype = \"sendgrid\"\nurl = \"" + sendgrid.url("/v3/mail/send") +
                     "\"\napi_key = \"" + api_key + "\"\nfrom = \"tw@example.com\"\nto = [\"ml@example.com\"]\n"
                     "group_wait_seconds = 0\n"
                     "[[notify.channel]]\nname = \"telegram\"\ntype = \"telegram\"\nbot_token = \"" + bot_token +
                     "\"\nchat_id = -100123\napi_url = \"" + telegram.url("/") + "\"\ngroup_wait_seconds = 0\n"
                     "[[notify.channel]]\nname = \"teams\"\ntype = \"teams\"\nurl = \"" + teams_url +
                     "\"\ngroup_wait_seconds = 0\n"
                     "[[notify.channel]]\nname = \"pagerduty\"\ntype = \"pagerduty\"\nrouting_key = \"" + routing_key +
                     "\"\nurl = \"" + pagerduty.url("/v2/enqueue") + "\"\nmin_severity = \"warning\"\n");
  // A webhook URL from a file, not argv.
  WriteOwnerOnly(dir / "hook-url", filed_url + "\n");
  WriteSickRun(dir / "logs/sick");
  const std::string db = dir / "tw.db";
  DaemonProcess d({"--config", config, "--webhook-file", dir / "hook-url", "--logdir", dir / "logs", "--db", db,
                   "--rescan-interval", "1"},
                  dir / "daemon.log");
  const std::vector<std::string> secrets = {"T0SLACKSECRET", "B0SLACKSECRET", "xoxSLACKTOKEN123", "WHPATHSECRET987",
                                            "WHQUERYSECRET", hook_secret, "tw-topic-SECRET42", ntfy_token,
                                            "SENDGRIDKEY", "FILEDSECRET31", "TGTOKENSECRET", "TEAMSSIGSECRET",
                                            "PDROUTINGKEYSECRET"};
  const std::string cmdline = testing::ReadFile("/proc/" + std::to_string(d.pid()) + "/cmdline");
  for (const auto& s : secrets) EXPECT_EQ(cmdline.find(s), std::string::npos) << s << " in argv";

  // Every channel got the finding and refused it, its answer echoing its secrets.
  ASSERT_TRUE(slack.WaitForRequests(1, 40) && hook.WaitForRequests(2, 40) && ntfy.WaitForRequests(1, 40) &&
              sendgrid.WaitForRequests(1, 40) && filed.WaitForRequests(1, 40) && telegram.WaitForRequests(1, 40) &&
              teams.WaitForRequests(1, 40) && pagerduty.WaitForRequests(1, 40))
      << d.Log();
  ASSERT_TRUE(WaitFor([&] {
    return QueryInt(db, "SELECT count(DISTINCT channel) FROM outbox WHERE last_error LIKE '%refused: you sent%'") == 8;
  }, 20s)) << d.Log();
  EXPECT_EQ(ntfy.requests()[0].headers["authorization"], "Bearer " + ntfy_token);  // it was sent, of course
  std::string outbox;
  ASSERT_EQ(testing::RunCommand(Cli() + " query --format csv --db " + ShellQuote(db) + " 'SELECT * FROM outbox'", &outbox), 0);
  const std::string status = StatusOf(db) + StatusOf(db, nullptr, "--json");
  std::string test_out;
  testing::RunCommand(Cli() + " notify test --config " + ShellQuote(config) + " --webhook-file " + ShellQuote(dir / "hook-url"),
                      &test_out);
  d.Signal(SIGTERM);
  EXPECT_EQ(ExitStatus(d.Wait(15s)), 0) << d.Log();
  const std::string log = d.Log();
  for (const auto& s : secrets) {
    EXPECT_EQ(log.find(s), std::string::npos) << s << " in the log:\n" << log;
    EXPECT_EQ(outbox.find(s), std::string::npos) << s << " in the outbox:\n" << outbox;
    EXPECT_EQ(status.find(s), std::string::npos) << s << " in status:\n" << status;
    EXPECT_EQ(test_out.find(s), std::string::npos) << s << " in notify test:\n" << test_out;
  }
  // What was said is kept, with the secrets cut out.
  EXPECT_NE(status.find("refused: you sent"), std::string::npos) << status;
  EXPECT_NE(test_out.find("ntfy (ntfy, http://127.0.0.1:" + std::to_string(ntfy.port()) + "/…)"), std::string::npos)
      << test_out;
  EXPECT_NE(test_out.find("telegram (telegram, http://127.0.0.1:" + std::to_string(telegram.port()) + "/ chat -100123)"),
            std::string::npos)
      << test_out;
  EXPECT_NE(test_out.find("teams (teams, http://127.0.0.1:" + std::to_string(teams.port()) + "/workflows/…)"),
            std::string::npos)
      << test_out;
}

TEST(HostileStoreNotify, AWebhookUrlFileReadableByOthersIsRefused) {
  TempDir dir;
  fs::create_directories(dir / "logs");
  testing::WriteFile(dir / "url", "http://127.0.0.1:9/services/T0/B0/SECRETSECRET\n");
  fs::permissions(dir / "url", fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  DaemonProcess d({"--slack-webhook-file", dir / "url", "--logdir", dir / "logs", "--db", dir / "tw.db"},
                  dir / "daemon.log");
  EXPECT_EQ(ExitStatus(d.Wait(10s)), 78) << d.Log();
  EXPECT_NE(d.Log().find("readable by group or others (mode 0604)"), std::string::npos) << d.Log();
  EXPECT_EQ(d.Log().find("SECRETSECRET"), std::string::npos) << d.Log();
}

TEST(HostileStoreNotify, AWebhookUrlFromTheEnvironmentDeliversWithoutArgv) {
  TempDir dir;
  testing::HttpServer hook;
  WriteSickRun(dir / "logs/sick");
  DaemonProcess d({"--logdir", dir / "logs", "--db", dir / "tw.db", "--rescan-interval", "1"}, dir / "daemon.log",
                  {"TRAINWATCH_WEBHOOK=" + hook.url("/hook/ENVSECRET123")});
  ASSERT_TRUE(hook.WaitForRequests(1, 30)) << d.Log();
  EXPECT_NE(d.Log().find("notify: delivering to cli-webhook"), std::string::npos) << d.Log();
  EXPECT_EQ(d.Log().find("ENVSECRET123"), std::string::npos) << d.Log();
}

// ---------------------------------------------------------------------------------------------
// 6. Secrets under the unit: systemd credentials.

TEST(HostileStoreNotify, SecretsFromSystemdCredentialsWorkWithAConfigReadableByAll) {
  TempDir dir;
  testing::HttpServer hook;
  // As LoadCredential= leaves them: a directory of files only the service's user reads.
  fs::create_directories(dir / "creds");
  WriteOwnerOnly(dir / "creds/hook-url", hook.url("/hook/CREDSECRET55") + "\n");
  WriteOwnerOnly(dir / "creds/hook-secret", "signing-secret-from-cred\n");
  // The config holds no secret, so it may be world-readable (the DynamicUser must read it).
  const std::string config = dir / "trainwatch.toml";
  testing::WriteFile(config, "[[notify.channel]]\nname = \"hook\"\ntype = \"webhook\"\n"
                             "url_credential = \"hook-url\"\nsecret_credential = \"hook-secret\"\n");
  fs::permissions(config, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                              fs::perms::others_read);
  // A URL file among the credentials: systemd decides who reads it, whatever its mode.
  testing::HttpServer filed;
  testing::WriteFile(dir / "creds/filed-url", filed.url("/hook/CREDFILE77") + "\n");
  fs::permissions(dir / "creds/filed-url", fs::perms::owner_read | fs::perms::group_read);
  WriteSickRun(dir / "logs/sick");
  DaemonProcess d({"--config", config, "--webhook-file", dir / "creds/filed-url", "--logdir", dir / "logs", "--db",
                   dir / "tw.db", "--rescan-interval", "1"},
                  dir / "daemon.log", {"CREDENTIALS_DIRECTORY=" + (dir / "creds")});
  ASSERT_TRUE(hook.WaitForRequests(1, 30)) << d.Log();
  ASSERT_TRUE(filed.WaitForRequests(1, 30)) << d.Log();
  EXPECT_EQ(hook.requests()[0].target, "/hook/CREDSECRET55");
  EXPECT_EQ(hook.requests()[0].headers.count("webhook-signature"), 1u);
  EXPECT_EQ(d.Log().find("CREDSECRET55"), std::string::npos) << d.Log();
  EXPECT_EQ(d.Log().find("CREDFILE77"), std::string::npos) << d.Log();
}

}  // namespace
}  // namespace tw

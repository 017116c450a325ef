// A user rule cannot hang, bloat or silence the doctor (issue 14): a rule that loops or
// allocates without end is stopped at its time or memory limit, reported as a problem of that
// rule (file:line, which limit, how far it got), and skipped; the other rules still run and
// fire, in the engine, in `trainwatch diagnose` and in the real daemon, whose cycle ends (the
// WAL is not pinned). Thresholds that are not finite numbers and unknown rule ids are refused
// before anything is created, and a refused setpriority is said, not swallowed.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sqlite3.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstddef>
#include <fcntl.h>
#include <filesystem>
#include <future>
#include <random>
#include <thread>

#include "app/config.h"
#include "diagnose/engine.h"
#include "support/daemon_process.h"
#include "support/diagnose_fixture.h"
#include "support/event_writer.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using testing::ShellQuote;

using namespace std::chrono_literals;
using testing::DaemonProcess;
using testing::EventFileWriter;
using testing::QueryInt;
using testing::RunCommand;
using testing::TempDir;
using testing::WaitFor;
namespace fs = std::filesystem;

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// An endless recursive CTE: no row ever passes the filter, so the statement never ends. Its
// SELECT starts on line 4.
constexpr const char* kLoopRule =
    "-- id: loops_forever\n"
    "-- title: A rule that never returns\n"
    "-- roles: train_loss\n"
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)\n"
    "SELECT 'never' AS message FROM c WHERE x < 0\n";

// One value of 900 MB: refused before it is allocated.
constexpr const char* kBlobRule =
    "-- id: huge_blob\n"
    "-- roles: train_loss\n"
    "--\n"
    "-- Prose after the header does not move the line the SELECT is on.\n"
    "\n"
    "SELECT length(randomblob(900000000)) AS message\n";

// Memory without any large value: a C++ aggregate fed rows without end.
constexpr const char* kHoardRule =
    "-- id: hoards_rows\n"
    "-- roles: train_loss\n"
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)\n"
    "SELECT tw_median(x) AS message FROM c\n";

double Healthy(int64_t t, std::mt19937& rng) {
  std::normal_distribution<double> noise(0, 0.03);
  return (0.3 + 2.0 * std::pow(1 + t / 200.0, -0.7)) * std::exp(noise(rng));
}

class RuleLimits : public testing::DiagnoseFixture {
 protected:
  std::mt19937 rng_{5};

  std::string RulesDir() const { return dir_ / "rules"; }
  void AddRule(const std::string& file, const std::string& text) {
    fs::create_directories(RulesDir());
    testing::WriteFile(RulesDir() + "/" + file, text);
  }
  // A run whose loss turns NaN at step 700, and a healthy one; ingested.
  void WriteRuns() {
    WriteRun("sick", 1000, {{"Loss/train", [this](int64_t t) { return t >= 700 ? NAN : Healthy(t, rng_); }}});
    WriteRun("healthy", 1000, {{"Loss/train", [this](int64_t t) { return Healthy(t, rng_); }}});
    Ingest();
  }
  std::unique_ptr<diagnose::Engine> Open(diagnose::RuleLimitOptions limits) {
    diagnose::EngineOptions o;
    o.rules_dir = RulesDir();
    o.limits = limits;
    Result<std::unique_ptr<diagnose::Engine>> e = diagnose::Engine::Open(Db(), o);
    EXPECT_TRUE(e.ok()) << e.status().message();
    if (!e.ok()) return nullptr;
    EXPECT_TRUE((*e)->load_errors().empty()) << (*e)->load_errors().front();
    return std::move(*e);
  }
  // Evaluate on another thread, so a limit that does not work fails the test instead of
  // hanging it: past `deadline` the evaluation is cancelled and the test fails.
  static Result<diagnose::Evaluation> EvaluateWithin(diagnose::Engine& e, std::chrono::seconds deadline) {
    auto f = std::async(std::launch::async, [&] { return e.Evaluate(nullptr, testing::kRunT0 + 1e6); });
    if (f.wait_for(deadline) != std::future_status::ready) {
      ADD_FAILURE() << "the evaluation did not end within " << deadline.count() << " s";
      e.Cancel();
    }
    return f.get();
  }
  static bool Fired(const diagnose::Evaluation& ev, const std::string& rule, const std::string& run) {
    return std::any_of(ev.observations.begin(), ev.observations.end(),
                       [&](const diagnose::Observation& o) { return o.rule == rule && o.run == run; });
  }
};

TEST_F(RuleLimits, ALoopingRuleIsStoppedOnceReportedWithItsLineAndTheOthersStillFire) {
  AddRule("loop.sql", kLoopRule);
  WriteRuns();
  std::unique_ptr<diagnose::Engine> e = Open({.seconds = 0.3});
  ASSERT_TRUE(e);
  for (int cycle = 0; cycle < 3; ++cycle) {  // the engine works on after a stopped rule
    const auto t0 = std::chrono::steady_clock::now();
    Result<diagnose::Evaluation> ev = EvaluateWithin(*e, 30s);
    ASSERT_TRUE(ev.ok()) << ev.status().message();
    EXPECT_TRUE(Fired(*ev, "non_finite_loss", "sick"));
    EXPECT_EQ(ev->incomplete_rules, std::set<std::string>{"loops_forever"});
    if (cycle > 0) {
      // Benched: later evaluations skip it without spending its budget again (a minute at least).
      EXPECT_TRUE(ev->errors.empty()) << ev->errors[0].message;
      EXPECT_LT(std::chrono::steady_clock::now() - t0, 300ms) << "the benched rule ran again";
      continue;
    }
    // Stopped on the first run it met, then skipped: one budget per evaluation, not per run.
    ASSERT_EQ(ev->errors.size(), 1u);
    EXPECT_EQ(ev->errors[0].rule, "loops_forever");
    EXPECT_EQ(ev->errors[0].limit, "time");
    EXPECT_NE(ev->errors[0].message.find(RulesDir() + "/loop.sql:4: rule loops_forever went over its time "
                                         "limit of 0.3 s (stopped after 0."),
              std::string::npos)
        << ev->errors[0].message;
    EXPECT_NE(ev->errors[0].message.find("benched"), std::string::npos);
    // The read transaction ended: the WAL is not pinned between cycles.
    EXPECT_NE(sqlite3_get_autocommit(e->db().raw()), 0);
  }
}

TEST_F(RuleLimits, AHugeValueIsRefusedBeforeItIsMadeAndNamesTheLine) {
  AddRule("blob.sql", kBlobRule);
  WriteRuns();
  std::unique_ptr<diagnose::Engine> e = Open({});
  ASSERT_TRUE(e);
  Result<diagnose::Evaluation> ev = EvaluateWithin(*e, 30s);
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_TRUE(Fired(*ev, "non_finite_loss", "sick"));
  ASSERT_EQ(ev->errors.size(), 1u);
  EXPECT_EQ(ev->errors[0].limit, "memory");
  EXPECT_NE(ev->errors[0].message.find(RulesDir() + "/blob.sql:6: rule huge_blob went over its memory limit: "
                                       "it made a value larger than 128 MiB"),
            std::string::npos)
      << ev->errors[0].message;
}

TEST_F(RuleLimits, ARuleThatHoardsRowsIsStoppedAtItsMemoryLimit) {
  AddRule("hoard.sql", kHoardRule);
  WriteRuns();
  std::unique_ptr<diagnose::Engine> e = Open({.seconds = 120, .memory_bytes = 32 << 20});
  ASSERT_TRUE(e);
  Result<diagnose::Evaluation> ev = EvaluateWithin(*e, 60s);
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_TRUE(Fired(*ev, "non_finite_loss", "sick"));
  ASSERT_EQ(ev->errors.size(), 1u);
  EXPECT_EQ(ev->errors[0].limit, "memory");
  EXPECT_NE(ev->errors[0].message.find("hoard.sql:3: rule hoards_rows went over its memory limit of 32 MiB "
                                       "(the heap grew by "),
            std::string::npos)
      << ev->errors[0].message;
}

TEST_F(RuleLimits, CancelStillInterruptsALoopingRuleAndEndsTheTransaction) {
  AddRule("loop.sql", kLoopRule);
  WriteRuns();
  std::unique_ptr<diagnose::Engine> e = Open({.seconds = 600});
  ASSERT_TRUE(e);
  auto f = std::async(std::launch::async, [&] { return e->Evaluate(nullptr, testing::kRunT0 + 1e6); });
  // Setup, not an assertion: let the evaluation reach the looping rule (if it has not, Cancel
  // stops it between rules, which must hold as well).
  std::this_thread::sleep_for(500ms);
  e->Cancel();
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready) << "Cancel did not stop the looping rule";
  Result<diagnose::Evaluation> ev = f.get();
  ASSERT_FALSE(ev.ok());
  EXPECT_NE(ev.status().message().find("cancelled"), std::string::npos) << ev.status().message();
  EXPECT_NE(sqlite3_get_autocommit(e->db().raw()), 0) << "the read transaction was left open";
}

TEST_F(RuleLimits, TheCliReportsTheRuleAndStillFindsTheNan) {
  AddRule("loop.sql", kLoopRule);
  WriteRuns();
  testing::WriteFile(dir_ / "tw.toml", "[rules]\ndir = \"" + RulesDir() + "\"\ntime_limit_seconds = 0.5\n");
  const std::string cmd = "timeout 120 " + std::string(TW_CLI_BINARY) + " diagnose --db " + ShellQuote(Db()) +
                          " --config " + ShellQuote(dir_ / "tw.toml");
  std::string out;
  // (RunCommand appends 2>&1: a group keeps the redirections inside it.)
  ASSERT_EQ(RunCommand("{ " + cmd + " 2>/dev/null; }", &out), 0) << out;
  EXPECT_NE(out.find("non_finite_loss"), std::string::npos) << out;
  EXPECT_EQ(Occurrences(out, "rule error: " + RulesDir() + "/loop.sql:4: rule loops_forever went over its time "
                                 "limit of 0.5 s"),
            1u)
      << out;
  // JSON is the findings only: the rule's problem goes to stderr.
  ASSERT_EQ(RunCommand("{ " + cmd + " --format json 2>" + ShellQuote(dir_ / "err.txt") + "; }", &out), 0) << out;
  EXPECT_NE(out.find("\"rule\":\"non_finite_loss\""), std::string::npos) << out;
  const std::string err = testing::ReadFile(dir_ / "err.txt");
  EXPECT_NE(err.find("trainwatch: rule error: " + RulesDir() + "/loop.sql:4: rule loops_forever"), std::string::npos)
      << err;
}

// --- the daemon ---------------------------------------------------------------------------

constexpr double kWall0 = 1.7e9;

void Append(EventFileWriter& w, int64_t from, int64_t to, bool nan, std::mt19937& rng) {
  for (int64_t s = from; s < to; ++s)
    w.Add(testing::SimpleScalarEvent("Loss/train", s, kWall0 + s, static_cast<float>(nan ? NAN : Healthy(s, rng))));
  w.Flush();
}

std::string DaemonConfig(const TempDir& dir, const std::string& rules_extra) {
  return "[store]\npath = \"" + (dir / "tw.db") + "\"\n[watch]\nroots = [\"" + (dir / "logs") +
         "\"]\nrescan_interval_seconds = 1\n[rules]\ninterval_seconds = 0.5\n" + rules_extra;
}

// A TRUNCATE checkpoint succeeds only when no reader holds an old snapshot: true when the WAL
// is not pinned.
bool CheckpointCompletes(const std::string& db_path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, 200);
    rc = sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  }
  sqlite3_close(db);
  return rc == SQLITE_OK;
}

TEST(RuleLimitsDaemon, ALoopingRuleIsLoggedOnceAndTheNanRunStillFiresAndTheCycleEnds) {
  TempDir dir;
  std::mt19937 rng(9);
  const std::string db = dir / "tw.db";
  fs::create_directories(dir / "rules");
  testing::WriteFile(dir / "rules/loop.sql", kLoopRule);
  EventFileWriter sick(dir / "logs/sick/" + testing::EventFileName(1700000000, "h", 1, 0));
  sick.Add(testing::FileVersionEvent(kWall0));
  Append(sick, 0, 300, false, rng);
  testing::WriteFile(dir / "tw.toml",
                     DaemonConfig(dir, "dir = \"" + (dir / "rules") + "\"\ntime_limit_seconds = 0.5\n"));
  DaemonProcess d({"--config", dir / "tw.toml"}, dir / "daemon.log");
  ASSERT_TRUE(d.WaitForLog("diagnosis: ", 10s)) << d.Log();
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM scalars") == 300; }, 10s)) << d.Log();

  Append(sick, 300, 340, true, rng);
  const std::string last_step = "SELECT last_step FROM findings WHERE rule = 'non_finite_loss' AND state = 'firing'";
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, last_step) == 339; }, 30s)) << d.Log();
  // More data: another cycle examines the run, and meets the looping rule again.
  Append(sick, 340, 380, true, rng);
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, last_step) == 379; }, 30s)) << d.Log();

  const std::string said = "diagnosis rule skipped: " + (dir / "rules/loop.sql") +
                           ":4: rule loops_forever went over its time limit of 0.5 s";
  EXPECT_EQ(Occurrences(d.Log(), said), 1u) << "once per rule, not once per cycle\n" << d.Log();
  // The cycle ends: no read transaction is left holding the WAL.
  EXPECT_TRUE(WaitFor([&] { return CheckpointCompletes(db); }, 20s)) << d.Log();

  EXPECT_EQ(d.Stop(10s), std::optional<int>(0)) << "no clean exit within 10 s of SIGTERM\n" << d.Log();
}

// --- thresholds and ids, before anything is created ---------------------------------------

TEST(RuleConfig, ThresholdsThatAreNotFiniteAreRefusedNamingFileKeyAndValue) {
  TempDir dir;
  const std::string cfg = dir / "tw.toml";
  struct Case {
    std::string toml, expected;
  } const cases[] = {
      {"[rules.loss_spikes]\nz = nan\n", cfg + ":2: [rules.loss_spikes] z must be a finite number, got nan"},
      {"[rules.loss_spikes]\nz = inf\n", cfg + ":2: [rules.loss_spikes] z must be a finite number, got inf"},
      {"[rules.loss_spikes]\nz = -inf\n", cfg + ":2: [rules.loss_spikes] z must be a finite number, got -inf"},
      {"[rules]\ninterval_seconds = nan\n", cfg + ":2: [rules] interval_seconds must be a finite number, got nan"},
      {"[rules]\ntime_limit_seconds = inf\n", cfg + ":2: [rules] time_limit_seconds must be a finite number, got inf"},
      {"[rules]\ntime_limit_seconds = 0\n", cfg + ":2: [rules] time_limit_seconds must be between 0.1 and 3600"},
      {"[rules]\nmemory_limit_mb = 4\n", cfg + ":2: [rules] memory_limit_mb must be between 16 and 65536"},
  };
  for (const auto& c : cases) {
    testing::WriteFile(cfg, c.toml);
    Result<app::Config> r = app::LoadConfigFile(cfg);
    ASSERT_FALSE(r.ok()) << c.toml;
    EXPECT_EQ(r.status().message(), c.expected);
  }
  testing::WriteFile(cfg, "[rules]\ntime_limit_seconds = 2.5\nmemory_limit_mb = 64\n");
  Result<app::Config> good = app::LoadConfigFile(cfg);
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->rules.limits.seconds, 2.5);
  EXPECT_EQ(good->rules.limits.memory_bytes, int64_t{64} << 20);

  // A rule file's default, and --set, the same way.
  std::vector<std::string> errors;
  fs::create_directories(dir / "rules");
  testing::WriteFile(dir / "rules/r.sql", "-- id: r\n-- param z = nan: a threshold\n-- for: inf\nSELECT 'x' AS message\n");
  diagnose::LoadRules(dir / "rules", &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], dir / "rules/r.sql" + ":2: parameter z: 'nan' is not a finite number");
  testing::WriteFile(dir / "rules/r.sql", "-- id: r\n-- for: inf\nSELECT 'x' AS message\n");
  errors.clear();
  diagnose::LoadRules(dir / "rules", &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], dir / "rules/r.sql" + ":2: for must be a number of seconds >= 0");
  std::string out;
  EXPECT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " diagnose --set loss_spikes.z=nan --db " + ShellQuote(dir / "x.db") +
                           " 2>&1",
                       &out),
            2);
  EXPECT_NE(out.find("--set loss_spikes.z=nan: 'nan' is not a finite number"), std::string::npos) << out;
}

TEST(RuleConfig, ADaemonRefusesANanThresholdAtStartAndKeepsItsConfigOnReload) {
  TempDir dir;
  const std::string cfg = dir / "tw.toml";
  fs::create_directories(dir / "logs");
  testing::WriteFile(cfg, DaemonConfig(dir, "[rules.loss_spikes]\nz = nan\n"));
  {
    DaemonProcess d({"--config", cfg}, dir / "bad.log");
    std::optional<int> status = d.Wait(10s);
    ASSERT_TRUE(status.has_value()) << d.Log();
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 78) << d.Log();
    EXPECT_NE(d.Log().find("[rules.loss_spikes] z must be a finite number, got nan"), std::string::npos) << d.Log();
  }
  EXPECT_FALSE(fs::exists(dir / "tw.db")) << "a refused config must not create the store";

  testing::WriteFile(cfg, DaemonConfig(dir, "[rules.loss_spikes]\nz = 9\n"));
  DaemonProcess d({"--config", cfg}, dir / "good.log");
  ASSERT_TRUE(d.WaitForLog("diagnosis: ", 10s)) << d.Log();
  testing::WriteFile(cfg, DaemonConfig(dir, "[rules.loss_spikes]\nz = inf\n"));
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLog("reload rejected", 10s)) << d.Log();
  EXPECT_NE(d.Log().find(cfg + ":9: [rules.loss_spikes] z must be a finite number, got inf"), std::string::npos)
      << d.Log();
  EXPECT_EQ(d.Log().find("reload: configuration from"), std::string::npos) << "nothing was applied\n" << d.Log();
  EXPECT_FALSE(d.Wait(0ms).has_value()) << "a rejected reload must not stop the daemon" << d.Log();
  EXPECT_EQ(d.Stop(10s), std::optional<int>(0)) << "no clean exit within 10 s of SIGTERM\n" << d.Log();
}

TEST(RuleConfig, AnUnknownRuleIdIsRefusedBeforeTheStoreIsCreated) {
  TempDir dir;
  const std::string cfg = dir / "tw.toml";
  fs::create_directories(dir / "logs");
  testing::WriteFile(cfg, DaemonConfig(dir, "[rules.loss_spikez]\nz = 3\n"));
  DaemonProcess d({"--config", cfg}, dir / "daemon.log");
  std::optional<int> status = d.Wait(10s);
  ASSERT_TRUE(status.has_value()) << d.Log();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 78) << d.Log();
  EXPECT_NE(d.Log().find(cfg + ": [rules.loss_spikez]: no rule has this id"), std::string::npos) << d.Log();
  EXPECT_FALSE(fs::exists(dir / "tw.db")) << "the store was created for a config that was refused";
  EXPECT_FALSE(fs::exists(dir / "tw.db-wal"));

  // The CLI says the config's mistake, not the store's: it does not get that far.
  std::string out;
  EXPECT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " diagnose --config " + ShellQuote(cfg) + " --db " + ShellQuote(dir / "none.db") +
                           " 2>&1",
                       &out),
            1);
  EXPECT_NE(out.find("[rules.loss_spikez]: no rule has this id"), std::string::npos) << out;
  EXPECT_EQ(out.find("no such database"), std::string::npos) << out;
}

// --- the diagnosis thread's priority --------------------------------------------------------

// Starts the daemon with a seccomp filter that refuses setpriority with EPERM, as the unit's
// SystemCallFilter=~@resources did; stderr to `log`. Returns the pid. (Everything the child
// needs is made before fork: the test process has threads.)
pid_t StartDaemonWithoutSetpriority(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {TW_CLI_BINARY, "daemon"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_setpriority, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {static_cast<unsigned short>(std::size(filter)), filter};
  const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  char notify_unset[] = "NOTIFY_SOCKET";
  const pid_t pid = ::fork();
  if (pid != 0) {
    ::close(err);
    ::close(null);
    return pid;
  }
  ::dup2(err, 2);
  ::dup2(null, 1);
  ::unsetenv(notify_unset);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
    ::_exit(126);
  ::execv(raw[0], raw.data());
  ::_exit(127);
}

TEST(RuleLimitsDaemon, ARefusedSetpriorityIsLoggedOnceAndDiagnosisRunsOn) {
  TempDir dir;
  fs::create_directories(dir / "logs");
  testing::WriteFile(dir / "tw.toml", DaemonConfig(dir, ""));
  const std::string log = dir / "daemon.log";
  const pid_t pid = StartDaemonWithoutSetpriority({"--config", dir / "tw.toml"}, log);
  ASSERT_GT(pid, 0);
  struct Reap {  // a failed assertion must not leave a daemon behind
    pid_t pid;
    ~Reap() {
      if (pid <= 0) return;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{pid};
  const std::string said = "cannot lower the diagnosis thread's CPU priority (setpriority: Operation not permitted)";
  EXPECT_TRUE(WaitFor([&] { return testing::ReadFile(log).find(said) != std::string::npos; }, 10s))
      << testing::ReadFile(log);
  EXPECT_TRUE(WaitFor([&] { return testing::ReadFile(log).find("rules loaded") != std::string::npos; }, 10s))
      << testing::ReadFile(log);
  ::kill(pid, SIGTERM);
  int status = 0;
  ASSERT_TRUE(WaitFor([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, 10s)) << testing::ReadFile(log);
  reap.pid = -1;  // reaped
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << testing::ReadFile(log);
  EXPECT_EQ(Occurrences(testing::ReadFile(log), said), 1u) << testing::ReadFile(log);
}

}  // namespace
}  // namespace tw

// Live runs first: the daemon reads and diagnoses a run written to now before the history
// beside it (runs last written days ago), so the history never holds back a live run's alarm.
// The test asserts order, not time: every run here is sick, and the live run's finding must
// come before the history's, although its name sorts last and it was created last.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "app/diagnose_worker.h"
#include "store/store.h"
#include "support/daemon_process.h"
#include "support/store_dump.h"
#include "support/event_writer.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

// A run whose loss falls, then turns NaN for its last steps.
void WriteSickRun(const std::string& path, double wall0) {
  testing::EventFileWriter w(path);
  w.Add(testing::FileVersionEvent(wall0));
  for (int s = 0; s < 400; ++s) {
    const float loss = s < 390 ? 2.0f * std::exp(-s / 100.0f) + 0.1f : std::nanf("");
    w.Add(testing::SimpleScalarEvent("train/loss", s, wall0 + s, loss));
  }
  w.Flush();
}

// `trainwatch ingest` of `root` into `db`, as another process (no daemon running on it, or one
// that is not told).
void IngestOnce(const std::string& db, const std::string& root) {
  std::string out;
  ASSERT_EQ(testing::RunCommand(std::string(TW_CLI_BINARY) + " ingest --quiet --db " + db + " " + root + " 2>&1", &out), 0)
      << out;
}

// The runs with a non_finite_loss finding, in the order the findings were first stored.
std::vector<std::string> FindingOrder(const std::string& db) {
  std::vector<std::string> out;
  auto d = store::OpenReadOnly(db);
  if (!d.ok()) return out;
  auto q = (*d)->Prepare(
      "SELECT r.name FROM findings f JOIN runs r USING (run_id) WHERE f.rule = 'non_finite_loss' "
      "ORDER BY f.finding_id");
  if (!q.ok()) return out;
  while (true) {
    Result<bool> row = q->Step();
    if (!row.ok() || !*row) break;
    out.push_back(q->Text(0));
  }
  return out;
}

// A config for the daemon on `root` and `db` with one user rule (`rule_sql`, a rule file's text)
// and a time limit per rule; returns its path.
std::string ConfigWithUserRule(const std::string& dir, const std::string& root, const std::string& db,
                               const std::string& rule_sql, int time_limit_seconds) {
  testing::WriteFile(dir + "/rules/user.sql", rule_sql);
  const std::string config = dir + "/tw.toml";
  testing::WriteFile(config, "[store]\npath = \"" + db + "\"\n[watch]\nroots = [\"" + root +
                                 "\"]\n[rules]\ndir = \"" + dir + "/rules\"\ntime_limit_seconds = " +
                                 std::to_string(time_limit_seconds) + "\n");
  return config;
}

// Sets a file's access and modification times back to `when` (a run last written then).
void Backdate(const std::string& path, double when) {
  const timespec t[2] = {{static_cast<time_t>(when), 0}, {static_cast<time_t>(when), 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, 0), 0) << path;
}

TEST(DaemonPriority, ALiveRunIsReadAndDiagnosedBeforeTheHistory) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db", log = dir / "daemon.log";
  constexpr int kHistory = 40;
  const double two_days_ago = static_cast<double>(::time(nullptr)) - 2 * 86400;
  for (int i = 0; i < kHistory; ++i) {
    const std::string path = root + "/old_" + std::to_string(100 + i) + "/events.out.tfevents.1.h";
    WriteSickRun(path, two_days_ago - 3600);
    Backdate(path, two_days_ago);
  }
  WriteSickRun(root + "/zz_live/events.out.tfevents.2.h", static_cast<double>(::time(nullptr)) - 400);

  testing::DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "30"}, log);
  std::vector<std::string> order;
  ASSERT_TRUE(testing::WaitFor([&] { return (order = FindingOrder(db)).size() == kHistory + 1; }, 120s))
      << order.size() << " findings\n" << d.Log();
  EXPECT_EQ(order.front(), "zz_live") << "the live run's alarm waited behind the history";
  // Read first too: a file's source row is made when it is first read.
  auto first = store::OpenReadOnly(db);
  ASSERT_TRUE(first.ok());
  auto q = (*first)->Prepare("SELECT path FROM sources ORDER BY source_id LIMIT 1");
  ASSERT_TRUE(q.ok() && *q->Step());
  EXPECT_EQ(q->Text(0), root + "/zz_live/events.out.tfevents.2.h") << "the live run was read after the history";
  // The history's end is logged after its last slice is stored: wait for the line rather than
  // race it with the stop (the findings above can be in the store a moment before it).
  const std::string caught_up = "diagnosis: caught up; " + std::to_string(kHistory) + " runs examined";
  EXPECT_TRUE(testing::WaitFor([&] { return d.Log().find(caught_up) != std::string::npos; }, 30s)) << d.Log();
  EXPECT_EQ(d.Stop(10s), std::optional<int>(0)) << "no clean exit within 10 s of SIGTERM\n" << d.Log();
}

// A user rule that loops forever goes over its time limit on the live run and is benched; the
// live run's NaN must not wait for that: the critical rules get a pass of their own first.
TEST(DaemonPriority, ALiveRunsNanIsStoredBeforeASlowRuleIsStopped) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db", log = dir / "daemon.log";
  const std::string config = ConfigWithUserRule(
      dir.path(), root, db,
      "-- id: loops_forever\n-- title: A rule that never returns\n-- roles: train_loss\n"
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)\n"
      "SELECT 'never' AS message FROM c WHERE x < 0\n",
      5);
  WriteSickRun(root + "/live/events.out.tfevents.1.h", static_cast<double>(::time(nullptr)) - 400);
  testing::DaemonProcess d({"--config", config}, log);
  ASSERT_TRUE(testing::WaitFor([&] { return !FindingOrder(db).empty(); }, 60s)) << d.Log();
  EXPECT_EQ(d.Log().find("diagnosis rule skipped"), std::string::npos)
      << "the NaN was stored only after the looping rule's 5 s\n" << d.Log();
  // The full pass then meets the looping rule, stops it, and the NaN stays firing.
  EXPECT_TRUE(d.WaitForLog("diagnosis rule skipped", 60s)) << d.Log();
  EXPECT_EQ(FindingOrder(db), std::vector<std::string>{"live"});
  EXPECT_EQ(d.Stop(10s), std::optional<int>(0)) << "no clean exit within 10 s of SIGTERM\n" << d.Log();
}

// A live run's NaN interrupts the history slice being examined, instead of waiting for it: one
// large old run's evaluation can take seconds. Here a user rule takes about 1 s on every old
// run, and the history is in the store before the daemon starts, so its first slice (all six
// runs, every run with data at start) takes about 6 s; the live run's NaN, written once that
// slice has begun, must be stored before any finding of the history. Only a run's first NaN
// does that: the run then logs NaN every 300 ms, and the history must still be examined.
TEST(DaemonPriority, ALiveRunsNanInterruptsTheHistorySliceInProgress) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db", log = dir / "daemon.log";
  const std::string config = ConfigWithUserRule(
      dir.path(), root, db,
      "-- id: slow_rule\n-- title: A rule that takes its time on old runs\n-- severity: info\n"
      "-- roles: train_loss\n"
      "WITH RECURSIVE c(x) AS (SELECT 1 WHERE (SELECT name FROM runs WHERE run_id = :run_id) LIKE 'old%'\n"
      "  UNION ALL SELECT x + 1 FROM c WHERE x < 3000000)\n"
      "SELECT 'slow' AS message FROM (SELECT count(*) AS n FROM c) WHERE n > 0\n",
      60);
  constexpr int kHistory = 6;
  const double two_days_ago = static_cast<double>(::time(nullptr)) - 2 * 86400;
  for (int i = 0; i < kHistory; ++i) {
    const std::string path = root + "/old_" + std::to_string(i) + "/events.out.tfevents.1.h";
    testing::EventFileWriter w(path);
    w.Add(testing::FileVersionEvent(two_days_ago - 3600));
    for (int s = 0; s < 50; ++s) w.Add(testing::SimpleScalarEvent("train/loss", s, two_days_ago - 3600 + s, 1.0f / (1 + s)));
    w.Flush();
    Backdate(path, two_days_ago);
  }
  ASSERT_NO_FATAL_FAILURE(IngestOnce(db, root));
  testing::DaemonProcess d({"--config", config}, log);
  // The rules loaded: the first slice, the whole history, has begun.
  ASSERT_TRUE(d.WaitForLog("rules loaded", 60s)) << d.Log();
  std::this_thread::sleep_for(1500ms);
  const double wall0 = static_cast<double>(::time(nullptr)) - 400;
  testing::EventFileWriter live(root + "/zz_live/events.out.tfevents.2.h");
  live.Add(testing::FileVersionEvent(wall0));
  int step = 0;
  for (; step < 400; ++step)
    live.Add(testing::SimpleScalarEvent("train/loss", step, wall0 + step, step < 390 ? 1.0f : std::nanf("")));
  live.Flush();
  ASSERT_TRUE(testing::WaitFor([&] { return !FindingOrder(db).empty(); }, 60s)) << d.Log();
  EXPECT_EQ(testing::QueryInt(db, "SELECT count(*) FROM findings WHERE rule = 'slow_rule'"), 0)
      << "the live run's NaN waited for the history slice\n" << d.Log();
  // The history is examined afterwards all the same, though the live run goes on logging NaN
  // (only its first NaN pre-empts), and the interruption is no trouble. While the writer keeps
  // reading, history slices run at most a sixth of the time: 36 s here, minutes on a loaded
  // machine.
  const auto history_done = [&] {
    return testing::QueryInt(db, "SELECT count(*) FROM findings WHERE rule = 'slow_rule'") == kHistory;
  };
  const auto give_up = std::chrono::steady_clock::now() + 240s;
  while (!history_done() && std::chrono::steady_clock::now() < give_up) {
    for (int k = 0; k < 5; ++k, ++step) live.Add(testing::SimpleScalarEvent("train/loss", step, wall0 + step, std::nanf("")));
    live.Flush();
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_TRUE(history_done()) << "the history starved behind a run that keeps logging NaN\n" << d.Log();
  EXPECT_EQ(d.Log().find("examined again later"), std::string::npos) << d.Log();
  EXPECT_EQ(d.Stop(10s), std::optional<int>(0)) << "no clean exit within 10 s of SIGTERM\n" << d.Log();
}

// Findings that could not be stored (another process held the store's write lock past the
// busy timeout) are not lost: the runs stay to be examined and their findings are stored once
// the store is free, though nothing in them changes again.
TEST(DaemonPriority, FindingsThatCouldNotBeStoredAreStoredOnceTheStoreIsFree) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db", log = dir / "daemon.log";
  WriteSickRun(root + "/sick/events.out.tfevents.1.h", static_cast<double>(::time(nullptr)) - 400);
  ASSERT_NO_FATAL_FAILURE(IngestOnce(db, root));
  auto holder = store::Db::Open(db, store::Db::Mode::kReadWrite);
  ASSERT_TRUE(holder.ok()) << holder.status().ToString();
  ASSERT_TRUE((*holder)->Exec("BEGIN EXCLUSIVE").ok());
  testing::DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "30"}, log);
  ASSERT_TRUE(d.WaitForLog("cannot store findings", 60s)) << d.Log();
  EXPECT_TRUE(FindingOrder(db).empty());
  ASSERT_TRUE((*holder)->Exec("COMMIT").ok());
  holder->reset();
  EXPECT_TRUE(testing::WaitFor([&] { return FindingOrder(db) == std::vector<std::string>{"sick"}; }, 60s))
      << "the finding was lost with the failed slice\n" << d.Log();
  EXPECT_TRUE(d.WaitForLog("diagnosis: works again", 10s)) << d.Log();
  EXPECT_EQ(d.Stop(10s), std::optional<int>(0)) << "no clean exit within 10 s of SIGTERM\n" << d.Log();
}

// Diagnosis learns what changed from the writer's hand-over (RunsCommitted), not by scanning
// the store: at start it examines every run with data; later, a run is examined when the
// writer says it committed it. Here another process writes a sick run into the store behind
// the worker's back: it is left alone until its id is handed over.
TEST(DiagnoseWorkerHandOver, RunsAreExaminedWhenTheWriterHandsThemOver) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "d.db";
  const double wall0 = static_cast<double>(::time(nullptr)) - 400;
  WriteSickRun(root + "/first/events.out.tfevents.1.h", wall0);
  ASSERT_NO_FATAL_FAILURE(IngestOnce(db, root));
  app::Config config;
  config.db_path = db;
  config.rules_interval_ms = 100;
  app::DiagnoseWorker worker(db);
  ASSERT_TRUE(worker.Configure(config).ok());
  worker.Start();
  EXPECT_TRUE(testing::WaitFor([&] { return FindingOrder(db) == std::vector<std::string>{"first"}; }, 30s))
      << "the runs in the store at start are examined";
  WriteSickRun(root + "/second/events.out.tfevents.2.h", wall0);
  ASSERT_NO_FATAL_FAILURE(IngestOnce(db, root));
  const int64_t second = testing::QueryInt(db, "SELECT run_id FROM runs WHERE name = 'second'");
  ASSERT_GT(second, 0);
  std::this_thread::sleep_for(1500ms);  // several of the worker's turns
  EXPECT_EQ(FindingOrder(db), std::vector<std::string>{"first"}) << "a run no one handed over was examined";
  worker.RunsCommitted(second, /*live=*/true);
  EXPECT_TRUE(testing::WaitFor([&] { return FindingOrder(db).size() == 2; }, 30s));
  EXPECT_EQ(FindingOrder(db), (std::vector<std::string>{"first", "second"}));
  worker.Stop();
}

}  // namespace
}  // namespace tw

// The daemon's diagnosis, as a real process: a run whose loss turns NaN while the daemon
// watches produces exactly one firing finding (stored and logged once, kept current as more
// data arrives) and a run_verdict, healthy runs produce none, and a [rules] config typo is
// refused at start and on SIGHUP.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <random>

#include "store/store.h"
#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace std::chrono_literals;
using testing::DaemonProcess;
using testing::EventFileWriter;
using testing::TempDir;
using testing::WaitFor;

constexpr double kWall0 = 1.7e9;

using testing::QueryInt;

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// A healthy-looking loss from `from` to `to` (exclusive), or NaN when `nan`.
void Append(EventFileWriter& w, int64_t from, int64_t to, bool nan, std::mt19937& rng) {
  std::normal_distribution<double> noise(0, 0.03);
  for (int64_t s = from; s < to; ++s) {
    const double v = nan ? NAN : (0.3 + 2.0 * std::pow(1 + s / 200.0, -0.7)) * std::exp(noise(rng));
    w.Add(testing::SimpleScalarEvent("Loss/train", s, kWall0 + s, static_cast<float>(v)));
  }
  w.Flush();
}

std::string Config(const TempDir& dir, const std::string& rules_extra) {
  return "[store]\npath = \"" + (dir / "tw.db") + "\"\n[watch]\nroots = [\"" + (dir / "logs") +
         "\"]\nrescan_interval_seconds = 1\n[rules]\ninterval_seconds = 0.5\n" + rules_extra;
}

TEST(DaemonDiagnose, ALossTurningNanWhileWatchedFiresOnceAndStaysCurrent) {
  TempDir dir;
  std::mt19937 rng(3);
  const std::string db = dir / "tw.db";
  EventFileWriter sick(dir / "logs/sick/" + testing::EventFileName(1700000000, "h", 1, 0));
  EventFileWriter healthy(dir / "logs/healthy/" + testing::EventFileName(1700000000, "h", 2, 0));
  sick.Add(testing::FileVersionEvent(kWall0));
  healthy.Add(testing::FileVersionEvent(kWall0));
  Append(sick, 0, 300, false, rng);
  Append(healthy, 0, 300, false, rng);
  testing::WriteFile(dir / "tw.toml", Config(dir, ""));
  DaemonProcess d({"--config", dir / "tw.toml"}, dir / "daemon.log");
  ASSERT_TRUE(d.WaitForLog("diagnosis: ", 10s)) << d.Log();
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM scalars") == 600; }, 10s)) << d.Log();

  Append(sick, 300, 340, true, rng);  // the loss blows up while the daemon watches
  const std::string firing = "SELECT count(*) FROM findings WHERE rule = 'non_finite_loss' AND state = 'firing'";
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, firing) == 1; }, 15s)) << d.Log();
  EXPECT_EQ(QueryInt(db, "SELECT onset_step FROM findings WHERE rule = 'non_finite_loss'"), 300);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM finding_list WHERE run = 'healthy' AND severity != 'info'"), 0);

  // More NaN: the same finding is kept current (its last step moves), not repeated.
  Append(sick, 340, 400, true, rng);
  ASSERT_TRUE(WaitFor([&] {
    return QueryInt(db, "SELECT last_step FROM findings WHERE rule = 'non_finite_loss'") == 399;
  }, 15s)) << d.Log();
  EXPECT_EQ(QueryInt(db, firing), 1);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM finding_transitions t JOIN findings f USING (finding_id) "
                      "WHERE f.rule = 'non_finite_loss'"), 1);
  EXPECT_EQ(Occurrences(d.Log(), "finding firing: [critical] non_finite_loss on sick"), 1u) << d.Log();
  // The run's verdict is stored beside it, as information (no default channel would send it),
  // and the healthy run has none.
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM findings WHERE rule = 'run_verdict' AND state = 'firing' "
                         "AND severity = 'info' AND json_extract(evidence, '$.verdict') = 'kill' "
                         "AND run_id = (SELECT run_id FROM runs WHERE name = 'sick')"), 1);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM finding_list WHERE run = 'healthy' AND rule = 'run_verdict'"), 0);
  EXPECT_EQ(Occurrences(d.Log(), "finding firing: [info] run_verdict on sick: "), 1u) << d.Log();

  d.Signal(SIGTERM);
  std::optional<int> status = d.Wait(5s);
  ASSERT_TRUE(status.has_value()) << d.Log();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << d.Log();
}

TEST(DaemonDiagnose, ARulesConfigTypoIsRefusedAtStartAndOnReload) {
  TempDir dir;
  std::mt19937 rng(4);
  EventFileWriter w(dir / "logs/run/" + testing::EventFileName(1700000000, "h", 1, 0));
  w.Add(testing::FileVersionEvent(kWall0));
  Append(w, 0, 50, false, rng);
  const std::string cfg = dir / "tw.toml";

  testing::WriteFile(cfg, Config(dir, "[rules.loss_spikez]\nz = 3\n"));
  {
    DaemonProcess d({"--config", cfg}, dir / "bad.log");
    std::optional<int> status = d.Wait(10s);
    ASSERT_TRUE(status.has_value()) << "a config naming no rule must not start" << d.Log();
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 78) << d.Log();
    EXPECT_NE(d.Log().find(cfg + ": [rules.loss_spikez]: no rule has this id"), std::string::npos) << d.Log();
  }

  testing::WriteFile(cfg, Config(dir, "[rules.loss_spikes]\nz = 9\n"));
  DaemonProcess d({"--config", cfg}, dir / "good.log");
  ASSERT_TRUE(d.WaitForLog("diagnosis: ", 10s)) << d.Log();
  testing::WriteFile(cfg, Config(dir, "[rules.loss_spikes]\nzz = 9\n"));
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLog("reload rejected", 10s)) << d.Log();
  EXPECT_NE(d.Log().find("rule loss_spikes has no parameter 'zz'"), std::string::npos) << d.Log();
  EXPECT_FALSE(d.Wait(0ms).has_value()) << "a rejected reload must not stop the daemon" << d.Log();
  d.Signal(SIGTERM);
  EXPECT_TRUE(d.Wait(5s).has_value());
}

}  // namespace
}  // namespace tw

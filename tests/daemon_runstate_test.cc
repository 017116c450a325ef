// The daemon keeps per-run ingest state for the runs it used most recently only (so its memory
// does not grow with the number of runs watched). State it drops must come back from the store
// intact: here, each tag's highest live step, without which a writer resuming from a checkpoint
// (its steps going backwards) would go unnoticed and old and new points would mix.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdio>

#include "store/store.h"
#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace std::chrono_literals;

using testing::QueryInt;

TEST(DaemonRunState, AnEvictedRunStillSeesItsStepsGoBackwards) {
  testing::TempDir dir;
  const std::string db = dir / "tw.db";
  constexpr int kRuns = 300;  // more than the daemon keeps (256)
  std::vector<std::unique_ptr<testing::EventFileWriter>> writers;
  for (int r = 0; r < kRuns; ++r) {
    char name[32];
    std::snprintf(name, sizeof name, "run-%03d", r);
    auto w = std::make_unique<testing::EventFileWriter>(dir / "logs" + "/" + name + "/" +
                                                        testing::EventFileName(1700000000, "h", r, 0) + ".v2");
    w->Add(testing::FileVersionEvent(1.7e9));
    for (int s = 0; s < 5; ++s) w->Add(testing::Tf2ScalarEvent("loss", s, 1.7e9 + s, 1.0f / (s + 1), s == 0));
    w->Flush();
    writers.push_back(std::move(w));
  }
  testing::DaemonProcess d({"--logdir", dir / "logs", "--db", db, "--rescan-interval", "1"}, dir / "d.log");
  ASSERT_TRUE(testing::WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM scalars") == kRuns * 5; }, 30s))
      << d.Log();
  // run-000 was read first, so its state is long gone. Its writer resumes from step 3: steps
  // 3 and 4 are logged again, so the first ones are superseded.
  for (int s = 3; s < 5; ++s) writers[0]->Add(testing::Tf2ScalarEvent("loss", s, 1.7e9 + 100 + s, 0.1f, false));
  writers[0]->Flush();
  ASSERT_TRUE(testing::WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM scalars") == kRuns * 5 + 2; }, 15s))
      << d.Log();
  ASSERT_TRUE(testing::WaitFor([&] {
    return QueryInt(db, "SELECT count(*) FROM scalar_points WHERE run = 'run-000'") == 5;
  }, 5s)) << "the rewind was not seen: old and new steps 3-4 are both live" << d.Log();
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM scalar_points_all WHERE run = 'run-000' AND superseded = 1"), 2);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM scalar_points WHERE run = 'run-000' AND step >= 3 AND value < 0.2"), 2);
  d.Signal(SIGTERM);
  std::optional<int> status = d.Wait(5s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << d.Log();
}

}  // namespace
}  // namespace tw

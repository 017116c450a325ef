// The pure parts of the daemon: the rescan's snapshot diff and the work queue.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "app/work_queue.h"
#include "support/test_env.h"
#include "watch/snapshot.h"

namespace tw {
namespace {

using testing::TempDir;
using testing::WriteFile;
namespace fs = std::filesystem;

TEST(Snapshot, WalkFindsEventFilesAndDirectoriesOnly) {
  TempDir dir;
  WriteFile(dir / "a/events.out.tfevents.1.h", "x");
  WriteFile(dir / "a/b/events.out.tfevents.2.h", "yy");
  WriteFile(dir / "a/notes.txt", "z");
  WriteFile(dir / "a/events.out.tfevents.3.h.profile-empty", "");
  fs::create_directories(dir / "empty");
  watch::Snapshot s = watch::Walk({dir.path()});
  EXPECT_EQ(s.files.size(), 2u);
  EXPECT_EQ(s.files.at(dir / "a/b/events.out.tfevents.2.h").size, 2);
  EXPECT_EQ(s.dirs.size(), 4u);  // root, a, a/b, empty
}

TEST(Snapshot, DiffReportsNewChangedAndGoneFiles) {
  TempDir dir;
  const std::string a = dir / "r/events.out.tfevents.1.h", b = dir / "r/events.out.tfevents.2.h",
                    c = dir / "r/events.out.tfevents.3.h";
  WriteFile(a, "1");
  WriteFile(b, "2");
  watch::Snapshot before = watch::Walk({dir.path()});
  EXPECT_EQ(watch::Diff({}, before), (std::vector<std::string>{a, b}));
  EXPECT_TRUE(watch::Diff(before, watch::Walk({dir.path()})).empty());
  testing::AppendFile(a, "more");
  fs::remove(b);
  WriteFile(c, "3");
  EXPECT_EQ(watch::Diff(before, watch::Walk({dir.path()})), (std::vector<std::string>{a, b, c}));
}

TEST(Snapshot, ReplacedFileOfTheSameSizeIsStillAChange) {
  TempDir dir;
  const std::string a = dir / "r/events.out.tfevents.1.h";
  WriteFile(a, "same");
  watch::Snapshot before = watch::Walk({dir.path()});
  WriteFile(dir / "tmp", "SAME");
  fs::rename(dir / "tmp", a);  // a new inode at the same path
  EXPECT_EQ(watch::Diff(before, watch::Walk({dir.path()})), (std::vector<std::string>{a}));
}

// [[console]] globs: regular files only (a symlink to one followed, for the ingester to judge),
// '*' not crossing '/', at most so many a glob (the first in name order), and a snapshot as
// stable as a walk's, so an unchanged log is not posted again.
TEST(Snapshot, GlobMatchesAreRegularFilesUpToALimit) {
  TempDir dir;
  for (const char* f : {"j1/slurm-1.out", "j2/slurm-2.out", "j3/slurm-3.out", "j1/notes.txt", "j1/deep/slurm-9.out"})
    WriteFile(dir / f, "x");
  fs::create_directories(dir / "j4/slurm-4.out");  // a directory
  ::mkfifo((dir / "j5").c_str(), 0600);
  fs::create_directories(dir / "j6");
  ::mkfifo((dir / "j6/slurm-6.out").c_str(), 0600);  // a FIFO
  WriteFile(dir / "elsewhere.txt", "y");
  fs::create_directories(dir / "j7");
  fs::create_symlink(dir / "elsewhere.txt", dir / "j7/slurm-7.out");
  const std::string glob = dir / "*/slurm-*.out";

  watch::Snapshot s;
  EXPECT_TRUE(watch::AddGlobMatches({glob, dir / "none/*.out"}, 100, &s).empty());
  std::vector<std::string> found;
  for (const auto& [p, st] : s.files) found.push_back(p);
  std::sort(found.begin(), found.end());
  EXPECT_EQ(found, (std::vector<std::string>{dir / "j1/slurm-1.out", dir / "j2/slurm-2.out", dir / "j3/slurm-3.out",
                                             dir / "j7/slurm-7.out"}));
  watch::Snapshot again;
  watch::AddGlobMatches({glob}, 100, &again);
  EXPECT_TRUE(watch::Diff(s, again).empty());

  watch::Snapshot limited;
  EXPECT_EQ(watch::AddGlobMatches({glob}, 2, &limited), std::vector<std::string>{glob});
  EXPECT_EQ(limited.files.size(), 2u);
  EXPECT_TRUE(limited.files.count(dir / "j1/slurm-1.out") && limited.files.count(dir / "j2/slurm-2.out"));
}

// The path a Take() gives, or "" when none.
std::string Next(app::WorkQueue& q) {
  auto item = q.Take(std::chrono::milliseconds(0));
  return item ? item->path : "";
}

TEST(WorkQueue, CoalescesAndKeepsOrder) {
  using app::Lane;
  app::WorkQueue q;
  EXPECT_TRUE(q.Post("a", Lane::kHistory));
  EXPECT_TRUE(q.Post("b", Lane::kHistory));
  EXPECT_FALSE(q.Post("a", Lane::kHistory));  // already queued: one read covers both appends
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(Next(q), "a");
  EXPECT_TRUE(q.Post("a", Lane::kHistory));  // taken, so it can be queued again, behind b
  EXPECT_EQ(Next(q), "b");
  EXPECT_EQ(Next(q), "a");
  EXPECT_EQ(Next(q), "");
}

TEST(WorkQueue, LiveFilesGoBeforeTheHistoryAndAPromotedFileIsTakenOnce) {
  using app::Lane;
  app::WorkQueue q;
  for (const char* p : {"h1", "h2", "h3"}) EXPECT_TRUE(q.Post(p, Lane::kHistory));
  EXPECT_TRUE(q.Post("live", Lane::kLive));
  EXPECT_TRUE(q.Post("h2", Lane::kLive));      // being written now: promoted
  EXPECT_FALSE(q.Post("live", Lane::kHistory));  // never demoted
  EXPECT_FALSE(q.Post("h2", Lane::kLive));
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.live_size(), 2u);
  auto first = q.Take(std::chrono::milliseconds(0));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->path, "live");
  EXPECT_EQ(first->lane, Lane::kLive);
  EXPECT_EQ(Next(q), "h2");
  EXPECT_EQ(Next(q), "h1");
  EXPECT_EQ(Next(q), "h3");  // h2's history place was skipped, not taken twice
  EXPECT_EQ(Next(q), "");
  EXPECT_EQ(q.size(), 0u);
}

// Drained: nothing queued and nothing in hand. A taken path is in hand until Done(), so the
// moment between the last Take() and its reader saying it is busy never reads as idle, and a
// path re-posted before Done() keeps the queue from draining in between.
TEST(WorkQueue, DrainedOnlyWhenNothingIsQueuedOrInHand) {
  using app::Lane;
  app::WorkQueue q;
  EXPECT_TRUE(q.Drained());
  q.Post("a", Lane::kHistory);
  EXPECT_FALSE(q.Drained());
  ASSERT_TRUE(q.Take(std::chrono::milliseconds(0)));
  EXPECT_EQ(q.size(), 0u);
  EXPECT_FALSE(q.Drained()) << "a taken path is still being read";
  q.Post("a", Lane::kHistory);  // more to read: to the back
  q.Done();
  EXPECT_FALSE(q.Drained());
  ASSERT_TRUE(q.Take(std::chrono::milliseconds(0)));
  q.Done();
  EXPECT_TRUE(q.Drained());
}

TEST(WorkQueue, CloseWakesAWaitingTaker) {
  app::WorkQueue q;
  std::optional<app::WorkQueue::Item> got = app::WorkQueue::Item{"unset"};
  std::thread t([&] { got = q.Take(std::chrono::seconds(30)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto t0 = std::chrono::steady_clock::now();
  q.Close();
  t.join();
  EXPECT_FALSE(got.has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_TRUE(q.closed());
  EXPECT_FALSE(q.Post("x", app::Lane::kLive));
}

}  // namespace
}  // namespace tw

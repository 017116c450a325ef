// A large damaged file must not hold the writer: the scan for the next valid record after
// damage goes in turns of at most the per-turn byte budget, each ending committed (its scan
// position is the resume point), and reading the file in such turns stores exactly what one
// read does. The same for a JSON-lines file that is one endless line or endless blank lines,
// and a .wandb log that is endless padding.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "ingest/file_ingester.h"
#include "store/store.h"
#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/store_dump.h"
#include "support/test_env.h"
#include "tfrecord/writer.h"

namespace tw {
namespace {

using testing::TempDir;
using namespace std::chrono_literals;

constexpr int64_t kMiB = 1 << 20;

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A few good records, `garbage` bytes of damage (no valid header anywhere in it), then a few
// more good records: what a disk error or a bad copy leaves.
std::string DamagedEventFile(int64_t garbage) {
  std::string out;
  tfrecord::AppendRecord(&out, testing::FileVersionEvent(1000));
  for (int s = 0; s < 5; ++s)
    tfrecord::AppendRecord(&out, testing::SimpleScalarEvent("loss", s, 1000 + s, 1.0f / (s + 1)));
  out.append(static_cast<size_t>(garbage), '\xA5');
  for (int s = 5; s < 10; ++s)
    tfrecord::AppendRecord(&out, testing::SimpleScalarEvent("loss", s, 1000 + s, 1.0f / (s + 1)));
  return out;
}

struct Turns {
  int turns = 0;            // IngestFile calls until nothing was left
  int resyncing_turns = 0;  // of them, turns that ended committed in the middle of the damage
};

// Reads `path` into `store` the way the daemon's writer does: turns of `budget` bytes until
// the file has nothing more. Each turn's commit must leave the store readable and consistent.
Turns ReadInTurns(store::Store& store, const std::string& path, int64_t budget) {
  ingest::IngestOptions o;
  o.max_bytes_per_call = budget;
  ingest::FileIngester ingester(store, o);
  Result<int64_t> run = store.EnsureRun("/r", ".");
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  Turns t;
  for (bool more = true; more && t.turns < 10000; ++t.turns) {
    more = false;
    ingest::RunState state(store, *run);  // a fresh state each turn: as after a restart
    EXPECT_TRUE(state.Load().ok());
    ingest::Totals totals;
    Status st = ingester.IngestFile(state, path, &totals, {}, &more);
    EXPECT_TRUE(st.ok()) << st.ToString();
    auto q = store.db().Prepare("SELECT resyncing FROM sources");
    if (q.ok() && *q->Step() && q->Int(0) == 1 && more) t.resyncing_turns++;
  }
  return t;
}

std::vector<std::string> OneRead(const std::string& path, TempDir& dir) {
  auto ref = store::Store::Open(dir / "ref.db");
  EXPECT_TRUE(ref.ok());
  ReadInTurns(**ref, path, 0);
  return testing::DumpStore((*ref)->db());
}

TEST(IngestBudget, DamageIsScannedInTurnsThatEachCommitAndEqualOneRead) {
  TempDir dir;
  const std::string path = dir / "events.out.tfevents.1.damaged";
  WriteFile(path, DamagedEventFile(24 * kMiB));
  const std::vector<std::string> want = OneRead(path, dir);

  auto s = store::Store::Open(dir / "turns.db");
  ASSERT_TRUE(s.ok());
  const Turns t = ReadInTurns(**s, path, 2 * kMiB);
  // 24 MiB of damage at 2 MiB a turn: about 12 turns end inside it. Before the fix the scan
  // ignored the budget and the first turn read the whole file.
  EXPECT_GE(t.resyncing_turns, 8) << t.turns << " turns";
  EXPECT_EQ(testing::DumpStore((*s)->db()), want);
  auto q = (*s)->db().Prepare(
      "SELECT count(*), sum(kind = 'resynced') FROM ingest_errors");
  ASSERT_TRUE(q.ok() && *q->Step());
  EXPECT_EQ(q->Int(1), 1);  // one resync, however many turns it took
}

// A stop asked while the reader scans damage is seen within about a chunk: the turn ends
// committed in the middle of it, not after the whole file (1 GiB here, sparse).
TEST(IngestBudget, AStopRequestEndsAScanOfDamageWithinAChunk) {
  TempDir dir;
  const std::string path = dir / "events.out.tfevents.1.damaged";
  WriteFile(path, DamagedEventFile(0));
  const int64_t size = int64_t{1} << 30;
  ASSERT_EQ(::truncate(path.c_str(), size), 0);  // a GiB of zeros after the records: damage
  auto s = store::Store::Open(dir / "stop.db");
  ASSERT_TRUE(s.ok());
  std::atomic<bool> stop{false};
  ingest::IngestOptions o;
  o.stop = &stop;
  ingest::FileIngester ingester(**s, o);
  Result<int64_t> run = (*s)->EnsureRun("/r", ".");
  ASSERT_TRUE(run.ok());
  ingest::RunState state(**s, *run);
  ASSERT_TRUE(state.Load().ok());
  ingest::Totals totals;
  bool more = false;
  std::thread asker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
  });
  const Status st = ingester.IngestFile(state, path, &totals, {}, &more);
  asker.join();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(more);
  auto q = (*s)->db().Prepare("SELECT committed_offset, resyncing FROM sources");
  ASSERT_TRUE(q.ok() && *q->Step());
  EXPECT_LT(q->Int(0), size / 2) << "the stop was seen only after the whole scan";
  EXPECT_EQ(q->Int(1), 1) << "the turn did not end inside the damage";
}

TEST(IngestBudget, AnEndlessJsonLineIsSkippedInTurnsAndEqualsOneRead) {
  TempDir dir;
  std::filesystem::create_directories(dir / "files");
  const std::string path = dir / "files/wandb-history.jsonl";
  std::string bytes = "{\"_step\": 0, \"loss\": 1.5}\n";
  bytes.append(80 * kMiB, 'x');  // one line longer than the 64 MiB a line may have
  bytes += "\n\n\n{\"_step\": 1, \"loss\": 1.25}\n";
  bytes.append(6 * kMiB, '\n');   // and then nothing but blank lines
  bytes += "{\"_step\": 2, \"loss\": 1.0}\n";
  WriteFile(path, bytes);
  const std::vector<std::string> want = OneRead(path, dir);

  auto s = store::Store::Open(dir / "turns.db");
  ASSERT_TRUE(s.ok());
  const Turns t = ReadInTurns(**s, path, 4 * kMiB);
  // The first 64 MiB of the line are gathered in one turn (a line may be that long); the
  // remaining 16 MiB of it and the 6 MiB of blank lines go in turns of 4 MiB.
  EXPECT_GE(t.turns, 6);
  EXPECT_GE(t.resyncing_turns, 3) << "the over-long line was not skipped across turns";
  EXPECT_EQ(testing::DumpStore((*s)->db()), want);
  auto q = (*s)->db().Prepare(
      "SELECT count(*) FROM ingest_errors WHERE kind = 'line_too_long'");
  ASSERT_TRUE(q.ok() && *q->Step());
  EXPECT_EQ(q->Int(0), 1);
  auto bad = (*s)->db().Prepare("SELECT count(*) FROM ingest_errors WHERE kind = 'bad_line'");
  ASSERT_TRUE(bad.ok() && *bad->Step());
  EXPECT_EQ(bad->Int(0), 0) << "the rest of the skipped line was read as a line of its own";
}

TEST(IngestBudget, DaemonScansAHugeDamagedFileInTurnsBesideALiveRunAndStopsOnSigterm) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db", log = dir / "daemon.log";
  std::filesystem::create_directories(root + "/junk");
  std::filesystem::create_directories(root + "/live");
  // 16 GiB of nothing (sparse: no disk used) named like an event file: the whole of it is
  // damage to scan for a valid header.
  const std::string junk = root + "/junk/events.out.tfevents.1.junk";
  const int64_t junk_size = int64_t{16} << 30;
  WriteFile(junk, "");
  ASSERT_EQ(::truncate(junk.c_str(), junk_size), 0);
  testing::EventFileWriter live(root + "/live/events.out.tfevents.1.live");
  live.Add(testing::FileVersionEvent(1000));
  for (int s = 0; s < 20; ++s) live.Add(testing::SimpleScalarEvent("loss", s, 1000 + s, 1.0f));
  live.Flush();

  const std::string junk_offset =
      "SELECT committed_offset FROM sources WHERE path = '" + junk + "' AND resyncing = 1";
  const std::string live_points = "SELECT count(*) FROM scalars";
  const std::vector<std::string> args = {"--logdir", root, "--db", db, "--rescan-interval", "30"};
  int64_t stopped_at = 0;
  {
    testing::DaemonProcess d(args, log);
    // The scan commits its position as it goes, and the live run is read beside it.
    ASSERT_TRUE(testing::WaitFor([&] { return testing::QueryInt(db, junk_offset) > 0 && testing::QueryInt(db, live_points) == 20; }, 30s))
        << "scan at " << testing::QueryInt(db, junk_offset) << ", live points " << testing::QueryInt(db, live_points) << "\n" << d.Log();
    for (int s = 20; s < 25; ++s) live.Add(testing::SimpleScalarEvent("loss", s, 1000 + s, 1.0f));
    live.Flush();
    ASSERT_TRUE(testing::WaitFor([&] { return testing::QueryInt(db, live_points) == 25; }, 30s))
        << "the live run waited behind the damaged file\n" << d.Log();
    ASSERT_EQ(d.Stop(10s), std::optional<int>(0))  // 10 s: systemd's default stop timeout
        << "no clean exit within 10 s of SIGTERM\n" << d.Log();
    stopped_at = testing::QueryInt(db, junk_offset);
    ASSERT_GT(stopped_at, 0);
    ASSERT_LT(stopped_at, junk_size) << "the scan was not stopped in the middle";
  }
  // A restart resumes the scan where it was committed, not from 0, and reports the damage once.
  testing::DaemonProcess d(args, log);
  EXPECT_TRUE(testing::WaitFor([&] { return testing::QueryInt(db, junk_offset) > stopped_at; }, 30s)) << d.Log();
  EXPECT_EQ(testing::QueryInt(db, "SELECT count(*) FROM ingest_errors WHERE path = '" + junk + "'"), 1);
  EXPECT_EQ(d.Stop(10s), std::optional<int>(0)) << "no clean exit within 10 s of SIGTERM\n" << d.Log();
}

}  // namespace
}  // namespace tw

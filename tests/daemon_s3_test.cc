// An s3:// root in the daemon (docs/sources.md "Object-store logdirs"), against a real
// S3-compatible server on loopback (the vendored s3rver, tests/support/s3_server.h): a logdir
// uploaded object by object, as TensorBoard's writers upload it (the whole object again at
// each flush), must end in the store exactly as the same files on disk give; an object
// rewritten whole with more records is read on, one rewritten with other bytes is a new
// generation; 503 SlowDown answers and dropped connections lose and double nothing (through
// tests/support/fault_proxy.h); wrong credentials are said, and retried until they work.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/fault_proxy.h"
#include "support/http_server.h"
#include "support/s3_server.h"
#include "support/store_dump.h"
#include "support/test_env.h"
#include "tfrecord/writer.h"

namespace tw {
namespace {

using namespace tw::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr double kWall0 = 1700000000.0;

#define REQUIRE_NODE()                                                            \
  if (!NodeAvailable()) GTEST_SKIP() << "node is not installed (tools/install-deps.sh)"

// The store's content with the object root written as the local one: what a one-shot ingest
// of the same files on disk must equal, point by point (offsets, generations, supersession).
std::vector<std::string> DumpAs(const std::string& db_path, const std::string& from, const std::string& to) {
  auto db = store::OpenReadOnly(db_path);
  if (!db.ok()) return {"<unreadable store>"};
  std::vector<std::string> d;
  try {
    d = DumpStore(**db);
  } catch (const std::exception& e) {
    return {std::string("<dump failed: ") + e.what() + ">"};
  }
  if (auto rows = QueryRows(db_path, "SELECT path, generation, committed_offset, records, status FROM sources"))
    for (auto& r : *rows) d.push_back("source|" + r);
  if (auto rows = QueryRows(db_path, "SELECT path, offset, kind FROM ingest_errors"))
    for (auto& r : *rows) d.push_back("error|" + r);
  for (auto& l : d) {
    // A table's rows carry no time: they get their file's modification time when read, which
    // for an object is its upload's (to the second), not the local file's.
    if (l.starts_with("scalar|") && l.find("metrics.csv|") != std::string::npos) {
      size_t at = 0;
      for (int field = 0; field < 8; ++field) at = l.find('|', at) + 1;
      l.replace(at, l.find('|', at) - at, "WALL");
    }
  }
  for (auto& l : d)
    for (size_t at = from.empty() ? std::string::npos : l.find(from); at != std::string::npos; at = l.find(from, at + to.size()))
      l.replace(at, from.size(), to);
  std::sort(d.begin(), d.end());
  return d;
}

std::string DiffSummary(const std::vector<std::string>& got, const std::vector<std::string>& want) {
  std::vector<std::string> extra, missing;
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::string out = std::to_string(extra.size()) + " extra, " + std::to_string(missing.size()) + " missing";
  for (size_t i = 0; i < std::min<size_t>(extra.size(), 6); ++i) out += "\n  + " + extra[i];
  for (size_t i = 0; i < std::min<size_t>(missing.size(), 6); ++i) out += "\n  - " + missing[i];
  return out;
}

// A logdir on disk mirrored into the bucket: each write to a local file is followed by an
// upload of the whole file, as a TF writer on S3 re-uploads its object at each flush.
class Mirror {
 public:
  Mirror(S3Server& s3, std::string local, std::string prefix)
      : s3_(s3), local_(std::move(local)), prefix_(std::move(prefix)) {}
  void Upload(const std::string& path) {
    const std::string key = prefix_ + "/" + fs::path(path).lexically_relative(local_).native();
    std::string why;
    ASSERT_TRUE(s3_.Put(key, ReadFile(path), &why)) << key << ": " << why;
  }
  // Uploads only the first n bytes of the local file (a flush caught mid-record).
  void UploadPrefix(const std::string& path, size_t n) {
    const std::string key = prefix_ + "/" + fs::path(path).lexically_relative(local_).native();
    ASSERT_TRUE(s3_.Put(key, ReadFile(path).substr(0, n)));
  }

 private:
  S3Server& s3_;
  std::string local_, prefix_;
};

void AddSteps(EventFileWriter& w, int64_t from, int64_t to, std::mt19937& rng, double wall0 = kWall0) {
  std::uniform_real_distribution<float> value(0.0f, 4.0f);
  for (int64_t step = from; step < to; ++step) {
    w.Add(SimpleScalarEvent("train/loss", step, wall0 + static_cast<double>(step) * 0.25, value(rng)));
    w.Add(SimpleScalarEvent("train/acc", step, wall0 + static_cast<double>(step) * 0.25, value(rng)));
  }
}

std::string EventPath(const std::string& dir, int counter) {
  return dir + "/" + EventFileName(1700000000 + counter, "host", 4242, counter);
}

// The config of a daemon on `root` through `endpoint`, polled every 0.2 s, with credentials
// from `credentials_file` (profile "test") or, when empty, the environment.
std::string WriteConfig(const TempDir& dir, const std::string& root, const std::string& endpoint,
                        const std::string& credentials_file = "", int timeout_seconds = 5) {
  const std::string path = dir / "trainwatch.toml";
  WriteFile(path, "[store]\npath = \"" + dir / "daemon.db" + "\"\n[watch]\nroots = [\"" + root +
                      "\"]\nrescan_interval_seconds = 30\n[s3]\nendpoint = \"" + endpoint +
                      "\"\npath_style = true\npoll_interval_seconds = 0.2\ntimeout_seconds = " +
                      std::to_string(timeout_seconds) + "\n"
                      "instance_metadata = \"\"\n" +
                      (credentials_file.empty() ? "" : "profile = \"test\"\ncredentials_file = \"" +
                                                           credentials_file + "\"\n") +
                      "[rules]\nenabled = false\n");
  return path;
}

std::vector<std::string> Env(const TempDir& dir) {
  return {"AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER", "AWS_SESSION_TOKEN",
          "AWS_PROFILE", "HOME=" + dir.path()};
}

void OneShot(const std::string& root, const std::string& db_path) {
  auto s = store::Store::Open(db_path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ingest::Summary summary;
  ASSERT_TRUE(ingest::IngestPaths(**s, {root}, {}, &summary).ok());
}

// Waits until the daemon's store, root mapped, equals a one-shot ingest of `local`.
void ExpectConverges(const TempDir& dir, const std::string& local, const std::string& s3_root,
                     DaemonProcess& daemon, std::chrono::seconds timeout = 30s) {
  const std::string oneshot = dir / ("oneshot-" + std::to_string(std::rand()) + ".db");
  ASSERT_NO_FATAL_FAILURE(OneShot(local, oneshot));
  const std::vector<std::string> want = DumpAs(oneshot, "", "");
  ASSERT_GT(want.size(), 100u);
  std::vector<std::string> got;
  const bool same = WaitFor(
      [&] {
        got = DumpAs(dir / "daemon.db", s3_root, local);
        return got == want;
      },
      timeout, 100ms);
  ASSERT_TRUE(same) << DiffSummary(got, want) << "\n--- daemon ---\n" << daemon.Log();
}

TEST(DaemonS3, TailsALogdirUploadedObjectByObjectAsTheSameFilesOnDisk) {
  REQUIRE_NODE();
  TempDir dir;
  S3Server s3;
  const std::string local = dir / "logs";
  const std::string root = "s3://logs/team/exp";
  Mirror mirror(s3, local, "team/exp");
  std::mt19937 rng(19);
  // One run there before the daemon starts; a key beside the prefix that must not be read.
  EventFileWriter a(EventPath(local + "/run-a", 0));
  a.Add(FileVersionEvent(kWall0));
  AddSteps(a, 0, 100, rng);
  a.Flush();
  mirror.Upload(a.path());
  ASSERT_TRUE(s3.Put("team/experiment-other/events.out.tfevents.1.h.1.1", "not read"));

  DaemonProcess daemon({"--config", WriteConfig(dir, root, s3.endpoint())}, dir / "daemon.log",
                       Env(dir));
  ASSERT_TRUE(WaitFor([&] { return QueryInt(dir / "daemon.db", "SELECT count(*) FROM scalars") == 200; }, 20s))
      << daemon.Log();

  // The run grows by whole re-uploads, one caught in the middle of a record (the writer's
  // flush seen half done: the record waits for its last byte).
  for (int64_t s = 100; s < 300; s += 50) {
    AddSteps(a, s, s + 50, rng);
    a.Flush();
    mirror.Upload(a.path());
    std::this_thread::sleep_for(150ms);
  }
  a.Add(SimpleScalarEvent("train/loss", 300, kWall0 + 75, 0.5f));
  const size_t whole = ReadFile(a.path()).size();
  a.Flush();
  mirror.UploadPrefix(a.path(), whole + 7);
  std::this_thread::sleep_for(400ms);
  mirror.Upload(a.path());
  // New runs appear object by object: a second file in run-a (the writer restarted), a new
  // run with two files, and a Lightning metrics table.
  EventFileWriter a1(EventPath(local + "/run-a", 1));
  a1.Add(FileVersionEvent(kWall0 + 1000));
  AddSteps(a1, 250, 320, rng, kWall0 + 1000);
  a1.Flush();
  mirror.Upload(a1.path());
  for (int f = 0; f < 2; ++f) {
    EventFileWriter b(EventPath(local + "/group/run-b", f));
    b.Add(FileVersionEvent(kWall0 + 2000 + f));
    AddSteps(b, f * 60, f * 60 + 60, rng, kWall0 + 2000);
    b.Flush();
    mirror.Upload(b.path());
  }
  const std::string csv = local + "/lightning/version_0/metrics.csv";
  fs::create_directories(fs::path(csv).parent_path());
  std::string table = "epoch,step,train_loss,val_loss\n";
  for (int step = 0; step < 40; ++step) {
    table += "0," + std::to_string(step) + "," + std::to_string(2.0 / (step + 1)) + ",\n";
    if (step % 10 == 9) {
      WriteFile(csv, table);
      mirror.Upload(csv);
      std::this_thread::sleep_for(100ms);
    }
  }

  ASSERT_NO_FATAL_FAILURE(ExpectConverges(dir, local, root, daemon));
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT count(*) FROM ingest_errors"), 0);
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT count(*) FROM sources WHERE path LIKE '%experiment-other%'"), 0);
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT count(*) FROM runs WHERE root = '" + root + "'"), 3);
  ASSERT_TRUE(daemon.Stop(10s).has_value()) << daemon.Log();

  // A restart reads nothing again: the same store, the same points.
  const std::vector<std::string> before = DumpAs(dir / "daemon.db", root, local);
  DaemonProcess again({"--config", dir / "trainwatch.toml"}, dir / "daemon2.log", Env(dir));
  ASSERT_TRUE(again.WaitForLog("caught up", 20s)) << again.Log();
  std::this_thread::sleep_for(600ms);  // a few more listings
  EXPECT_EQ(DumpAs(dir / "daemon.db", root, local), before);
}

TEST(DaemonS3, AnObjectRewrittenWholeIsReadOnOrReadAgainAsANewGeneration) {
  REQUIRE_NODE();
  TempDir dir;
  S3Server s3;
  const std::string local = dir / "logs", root = "s3://logs/exp";
  Mirror mirror(s3, local, "exp");
  std::mt19937 rng(7);
  const std::string path = EventPath(local + "/run", 0);
  {
    EventFileWriter w(path);
    w.Add(FileVersionEvent(kWall0));
    AddSteps(w, 0, 200, rng);
    w.Flush();
  }
  mirror.Upload(path);
  DaemonProcess daemon({"--config", WriteConfig(dir, root, s3.endpoint())}, dir / "daemon.log",
                       Env(dir));
  ASSERT_TRUE(WaitFor([&] { return QueryInt(dir / "daemon.db", "SELECT count(*) FROM scalars") == 400; }, 20s))
      << daemon.Log();
  // Rewritten whole with more records after the same ones: read on from the offset.
  {
    EventFileWriter w(path + ".tmp");
    w.Add(FileVersionEvent(kWall0));
    std::mt19937 same(7);
    AddSteps(w, 0, 200, same);
    AddSteps(w, 200, 300, rng);
    w.Flush();
    fs::rename(path + ".tmp", path);
  }
  mirror.Upload(path);
  ASSERT_NO_FATAL_FAILURE(ExpectConverges(dir, local, root, daemon));
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT count(*) FROM sources"), 1);
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT count(*) FROM run_events WHERE kind = 'file_replaced'"), 0);

  // Rewritten whole by a writer that started again (other bytes, fewer of them): a new
  // generation read from its start, the old points superseded, as for a file on disk.
  {
    EventFileWriter w(path + ".tmp");
    w.Add(FileVersionEvent(kWall0 + 5000));
    AddSteps(w, 0, 120, rng, kWall0 + 5000);
    w.Flush();
    fs::rename(path + ".tmp", path);
  }
  mirror.Upload(path);
  ASSERT_TRUE(WaitFor([&] {
    return QueryInt(dir / "daemon.db", "SELECT count(*) FROM run_events WHERE kind = 'file_replaced'") == 1 &&
           QueryInt(dir / "daemon.db", "SELECT count(*) FROM scalar_points") == 240;
  }, 20s)) << daemon.Log();
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT max(generation) FROM sources"), 1);
  auto live = DumpLiveScalars(dir / "daemon.db");
  const std::string oneshot = dir / "final.db";
  ASSERT_NO_FATAL_FAILURE(OneShot(local, oneshot));
  EXPECT_EQ(live, DumpLiveScalars(oneshot));

  // Deleted: its source is gone, its points stay, as a deleted file's.
  ASSERT_TRUE(s3.Delete("exp/run/" + fs::path(path).filename().native()));
  ASSERT_TRUE(WaitFor([&] {
    return QueryInt(dir / "daemon.db", "SELECT count(*) FROM run_events WHERE kind = 'file_gone'") == 1;
  }, 20s)) << daemon.Log();
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT count(*) FROM sources WHERE status = 'gone'"), 1);
  EXPECT_EQ(DumpLiveScalars(dir / "daemon.db"), live);
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT count(*) FROM ingest_errors"), 0);
}

TEST(DaemonS3, SlowDownAndDroppedConnectionsLoseAndDoubleNothing) {
  REQUIRE_NODE();
  TempDir dir;
  S3Server s3;
  FaultProxy proxy(s3.port());
  const std::string local = dir / "logs", root = "s3://logs/exp";
  Mirror mirror(s3, local, "exp");
  std::mt19937 rng(3);
  EventFileWriter w(EventPath(local + "/run", 0));
  w.Add(FileVersionEvent(kWall0));
  AddSteps(w, 0, 500, rng);
  w.Flush();
  mirror.Upload(w.path());
  // The first listing slowed down twice; reads slowed down, reset before an answer, and cut
  // halfway through their body.
  proxy.Arm(FaultProxy::Fault::kSlowDown, 2, "list-type=2");
  proxy.Arm(FaultProxy::Fault::kSlowDown, 2, "range: bytes=");
  proxy.Arm(FaultProxy::Fault::kReset, 1, "range: bytes=");
  proxy.Arm(FaultProxy::Fault::kResetMidBody, 1, "range: bytes=");
  DaemonProcess daemon({"--config", WriteConfig(dir, root, proxy.endpoint())}, dir / "daemon.log",
                       Env(dir));
  ASSERT_NO_FATAL_FAILURE(ExpectConverges(dir, local, root, daemon));
  EXPECT_EQ(proxy.faults_done(), 6) << ::testing::PrintToString(proxy.lines());
  // More while faults go on: a reset on the listing, a slow-down on the read of what is new.
  proxy.Arm(FaultProxy::Fault::kReset, 1, "list-type=2");
  proxy.Arm(FaultProxy::Fault::kSlowDown, 3, "range: bytes=");
  AddSteps(w, 500, 700, rng);
  w.Flush();
  mirror.Upload(w.path());
  ASSERT_NO_FATAL_FAILURE(ExpectConverges(dir, local, root, daemon));
  EXPECT_EQ(proxy.faults_done(), 10);
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT count(*) FROM ingest_errors"), 0);
}

TEST(DaemonS3, WrongCredentialsAreSaidAndTriedAgainUntilTheyWork) {
  REQUIRE_NODE();
  TempDir dir;
  S3Server s3;
  const std::string local = dir / "logs", root = "s3://logs/exp";
  Mirror mirror(s3, local, "exp");
  std::mt19937 rng(5);
  EventFileWriter w(EventPath(local + "/run", 0));
  w.Add(FileVersionEvent(kWall0));
  AddSteps(w, 0, 100, rng);
  w.Flush();
  mirror.Upload(w.path());
  const std::string creds = dir / "credentials";
  // The right key with the wrong secret: the server's signature is not ours.
  WriteFile(creds, "[test]\naws_access_key_id = S3RVER\naws_secret_access_key = sEcReTwRoNg\n");
  std::vector<std::string> env = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE",
                                  "HOME=" + dir.path()};
  DaemonProcess daemon({"--config", WriteConfig(dir, root, s3.endpoint(), creds)},
                       dir / "daemon.log", env);
  ASSERT_TRUE(daemon.WaitForLog("access denied (HTTP 403 SignatureDoesNotMatch", 20s)) << daemon.Log();
  EXPECT_NE(daemon.Log().find(root + ": listing failed, tried again every 0.2 s: listing " + root +
                              "/: access denied (HTTP 403 SignatureDoesNotMatch"),
            std::string::npos)
      << daemon.Log();
  EXPECT_EQ(daemon.Log().find("sEcReTwRoNg"), std::string::npos) << "a secret was logged";
  // Said once, not at every poll.
  std::this_thread::sleep_for(1s);
  const std::string log = daemon.Log();
  size_t said = 0;
  for (size_t at = log.find("listing failed"); at != std::string::npos; at = log.find("listing failed", at + 1)) ++said;
  EXPECT_EQ(said, 1u) << log;
  auto status = QueryRows(dir / "daemon.db", "SELECT value FROM daemon_state WHERE key = 's3'");
  ASSERT_TRUE(status && status->size() == 1) << daemon.Log();
  EXPECT_NE((*status)[0].find("access denied"), std::string::npos) << (*status)[0];
  std::string shown;
  RunCommand(std::string(TW_CLI_BINARY) + " status --db " + ShellQuote(dir / "daemon.db"), &shown);
  EXPECT_NE(shown.find("s3:          " + root + ": listing " + root + "/: access denied"), std::string::npos) << shown;
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT count(*) FROM scalars"), 0);
  // The right ones: the next poll reads the file again, and lists.
  WriteFile(creds, "[test]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n");
  ASSERT_TRUE(WaitFor([&] { return QueryInt(dir / "daemon.db", "SELECT count(*) FROM scalars") == 200; }, 20s))
      << daemon.Log();
  EXPECT_TRUE(daemon.WaitForLog("listing works again", 5s)) << daemon.Log();
  ASSERT_TRUE(daemon.process().alive());
}

TEST(DaemonS3, KillNineMidObjectThenARestartLosesAndDoublesNothing) {
  REQUIRE_NODE();
  TempDir dir;
  S3Server s3;
  const std::string local = dir / "logs", root = "s3://logs/exp";
  Mirror mirror(s3, local, "exp");
  std::mt19937 rng(11);
  EventFileWriter w(EventPath(local + "/run", 0));
  w.Add(FileVersionEvent(kWall0));
  AddSteps(w, 0, 20000, rng);
  w.Flush();
  mirror.Upload(w.path());
  // Small commits and turns, so that the kill lands inside the object.
  const std::string cfg = WriteConfig(dir, root, s3.endpoint());
  AppendFile(cfg, "[ingest]\nbatch_points = 200\nmax_bytes_per_turn = 4096\n");
  {
    DaemonProcess first({"--config", cfg}, dir / "daemon.log", Env(dir));
    ASSERT_TRUE(WaitFor([&] { return QueryInt(dir / "daemon.db", "SELECT count(*) FROM scalars") > 2000; }, 20s))
        << first.Log();
    first.KillAndReap();
  }
  const int64_t before = QueryInt(dir / "daemon.db", "SELECT count(*) FROM scalars");
  ASSERT_LT(before, 40000) << "read whole before the kill: nothing tested";
  DaemonProcess again({"--config", cfg}, dir / "daemon2.log", Env(dir));
  ASSERT_NO_FATAL_FAILURE(ExpectConverges(dir, local, root, again, 60s));
  EXPECT_EQ(QueryInt(dir / "daemon.db", "SELECT count(*) FROM scalars"), 40000);
}

TEST(DaemonS3, AServerThatNeverAnswersDoesNotHoldUpAStop) {
  HttpServer silent;
  Reply never;
  never.delay_seconds = 120;
  silent.SetDefault(never);
  TempDir dir;
  // A minute per request: only abandoning it lets the daemon stop in time.
  const std::string cfg =
      WriteConfig(dir, "s3://logs/exp", "http://127.0.0.1:" + std::to_string(silent.port()), "", 60);
  DaemonProcess daemon({"--config", cfg}, dir / "daemon.log", Env(dir));
  ASSERT_TRUE(silent.WaitForRequests(1, 20)) << daemon.Log();
  const auto t0 = std::chrono::steady_clock::now();
  const std::optional<int> status = daemon.Stop(4s);
  ASSERT_TRUE(status.has_value()) << "no exit within 4 s of SIGTERM while a listing waits" << daemon.Log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status << daemon.Log();
}

}  // namespace
}  // namespace tw

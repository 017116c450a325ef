// `trainwatch daemon` as a real process: it is started, fed by a test writer, signalled and
// killed, and its store is compared with what a one-shot ingest of the final files gives.
// Every wait polls with a deadline; no fixed sleep is an assertion. Children are always killed
// and reaped (DaemonProcess is RAII), temp dirs always removed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/source_names.h"
#include "ingest/discover.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/store_dump.h"
#include "support/test_env.h"
#include "tfrecord/writer.h"

namespace tw {
namespace {

using namespace tw::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Helpers

void Pause(std::chrono::milliseconds ms) { std::this_thread::sleep_for(ms); }

// Rows of a query against a store, read-only, as "a|b|c" (tests/support/store_dump.h).
std::optional<std::vector<std::string>> Query(const std::string& db_path, const std::string& sql) {
  return testing::QueryRows(db_path, sql);
}

int64_t Count(const std::string& db_path, const std::string& sql) {
  auto rows = Query(db_path, sql);
  return rows && !rows->empty() ? std::stoll((*rows)[0]) : -1;
}

std::vector<std::string> SortedRows(const std::string& db_path, const std::string& sql) {
  auto rows = Query(db_path, sql);
  if (!rows) return {"<unreadable store>"};
  std::sort(rows->begin(), rows->end());
  return *rows;
}

using Dump = std::vector<std::string>;

// The store's content (DumpStore) plus what DumpStore leaves out that tells a doubled read:
// runs, and each source's offset and record count.
Dump FullDump(const std::string& db_path) {
  auto db = store::OpenReadOnly(db_path);
  if (!db.ok()) return {"<unreadable store: " + db.status().ToString() + ">"};
  Dump d;
  try {
    d = DumpStore(**db);
  } catch (const std::exception& e) {
    return {std::string("<dump failed: ") + e.what() + ">"};
  }
  for (auto& l : SortedRows(db_path, "SELECT root, name FROM runs")) d.push_back("run|" + l);
  for (auto& l : SortedRows(db_path,
                            "SELECT path, generation, committed_offset, records, status, "
                            "error_count, resyncing FROM sources"))
    d.push_back("source|" + l);
  for (auto& l : SortedRows(db_path, "SELECT path, offset, kind FROM ingest_errors"))
    d.push_back("error|" + l);
  return d;
}


// Where two dumps first differ, for failure messages (whole dumps are too long to print).
std::string DiffSummary(const Dump& got, const Dump& want) {
  std::vector<std::string> extra, missing;
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                      std::back_inserter(missing));
  std::string out = std::to_string(got.size()) + " lines vs " + std::to_string(want.size()) +
                    " expected; " + std::to_string(extra.size()) + " extra, " +
                    std::to_string(missing.size()) + " missing";
  for (size_t i = 0; i < std::min<size_t>(extra.size(), 8); ++i) out += "\n  + " + extra[i];
  for (size_t i = 0; i < std::min<size_t>(missing.size(), 8); ++i) out += "\n  - " + missing[i];
  return out;
}

// A one-shot ingest of `roots` (what `trainwatch ingest` does) into a fresh store at `db_path`.
void OneShotIngest(const std::vector<std::string>& roots, const std::string& db_path) {
  auto s = store::Store::Open(db_path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ingest::Summary summary;
  Status st = ingest::IngestPaths(**s, roots, {}, &summary);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

// Every event file under `root` with its size.
std::map<std::string, int64_t> EventFiles(const std::string& root) {
  std::map<std::string, int64_t> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file() || !sources::IsSourcePath(it->path().native()))
      continue;
    out[it->path().native()] = static_cast<int64_t>(it->file_size());
  }
  return out;
}

// True when the store has one active source per event file under `roots`, each committed up
// to the file's size. `why` says what is still missing.
bool AllCommitted(const std::string& db_path, const std::vector<std::string>& roots,
                  std::string* why = nullptr) {
  std::map<std::string, int64_t> want;
  for (const auto& r : roots) want.merge(EventFiles(r));
  auto rows = Query(db_path, "SELECT path, committed_offset FROM sources WHERE status = 'active'");
  if (!rows) {
    if (why) *why = "store unreadable";
    return false;
  }
  std::map<std::string, int64_t> got;
  for (const auto& r : *rows) {
    const size_t bar = r.rfind('|');
    got[r.substr(0, bar)] = std::stoll(r.substr(bar + 1));
  }
  if (got == want) return true;
  if (why) {
    *why = "";
    for (const auto& [p, size] : want)
      if (!got.count(p) || got[p] != size)
        *why += "\n  " + p + ": size " + std::to_string(size) + ", committed " +
                (got.count(p) ? std::to_string(got[p]) : std::string("(no active source)"));
    for (const auto& [p, off] : got)
      if (!want.count(p)) *why += "\n  " + p + ": active source with no file";
  }
  return false;
}

// Bytes in event files under `roots` not yet committed (what `status` calls lag).
int64_t LagBytes(const std::string& db_path, const std::vector<std::string>& roots) {
  std::map<std::string, int64_t> committed;
  if (auto rows =
          Query(db_path, "SELECT path, committed_offset FROM sources WHERE status = 'active'")) {
    for (const auto& r : *rows) {
      const size_t bar = r.rfind('|');
      committed[r.substr(0, bar)] = std::stoll(r.substr(bar + 1));
    }
  }
  int64_t lag = 0;
  for (const auto& root : roots)
    for (const auto& [p, size] : EventFiles(root))
      lag += size - (committed.count(p) ? committed[p] : 0);
  return lag;
}

std::string Describe(int wait_status) {
  if (WIFEXITED(wait_status)) return "exit " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return "signal " + std::to_string(WTERMSIG(wait_status));
  return "wait status " + std::to_string(wait_status);
}

constexpr double kWall0 = 1700000000.0;
const char* const kTags[] = {"train/loss", "train/acc"};

std::string EventPath(const std::string& dir, int counter) {
  return dir + "/" + EventFileName(1700000000 + counter, "host", 4242, counter);
}

// Buffers one scalar per tag for each step in [from, to); wall times grow with the step and
// start at `wall0` (a rewrite of a run uses a later wall0, as a real re-run would).
void AddSteps(EventFileWriter& w, int64_t from, int64_t to, std::mt19937& rng,
              double wall0 = kWall0) {
  std::uniform_real_distribution<float> value(0.0f, 4.0f);
  for (int64_t step = from; step < to; ++step)
    for (const char* tag : kTags)
      w.Add(SimpleScalarEvent(tag, step, wall0 + static_cast<double>(step) * 0.25, value(rng)));
}

// A new event file holding the file_version record and steps [from, to), flushed.
std::unique_ptr<EventFileWriter> NewFile(const std::string& path, int64_t from, int64_t to,
                                         std::mt19937& rng, double wall0 = kWall0) {
  auto w = std::make_unique<EventFileWriter>(path);
  w->Add(FileVersionEvent(wall0));
  AddSteps(*w, from, to, rng, wall0);
  w->Flush();
  return w;
}

// Appends steps [from, to) in chunks of `chunk` steps, pausing between chunks (pacing only).
void AppendInChunks(EventFileWriter& w, int64_t from, int64_t to, int64_t chunk,
                    std::mt19937& rng, double wall0 = kWall0) {
  for (int64_t s = from; s < to; s += chunk) {
    AddSteps(w, s, std::min(to, s + chunk), rng, wall0);
    w.Flush();
    Pause(15ms);
  }
}

// A big logdir: `runs` runs of one file each, about `bytes_per_run` of simple_value scalars.
// The writers stay open so a test can keep appending.
std::vector<std::unique_ptr<EventFileWriter>> MakeBacklog(const std::string& root, int runs,
                                                          size_t bytes_per_run, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(0.0f, 1.0f);
  const char* tags[] = {"train/loss", "train/acc", "lr", "grad_norm"};
  std::vector<std::unique_ptr<EventFileWriter>> writers;
  for (int r = 0; r < runs; ++r) {
    char name[32];
    std::snprintf(name, sizeof name, "run-%02d", r);
    auto w = std::make_unique<EventFileWriter>(EventPath(root + "/" + name, 0));
    w->Add(FileVersionEvent(kWall0));
    size_t written = 0;
    for (int64_t step = 0; written < bytes_per_run; ++step) {
      for (const char* tag : tags)
        w->Add(SimpleScalarEvent(tag, step, kWall0 + static_cast<double>(step), value(rng)));
      if (w->buffered() > (256u << 10)) {
        written += w->buffered();
        w->Flush();
      }
    }
    w->Flush();
    writers.push_back(std::move(w));
  }
  return writers;
}

// The daemon's stderr, for failure messages.
std::string LogOf(const DaemonProcess& d) { return "\n--- daemon stderr ---\n" + d.Log(); }

// ---------------------------------------------------------------------------------------------
// Convergence under a live writer

// Runs the writer scenario against a daemon started with `flags`, then asserts the daemon's
// live points equal a one-shot ingest of the final files and every file is committed in full.
void ConvergenceScenario(const std::vector<std::string>& flags) {
  TempDir dir;
  const std::string root = dir / "logs", staging = dir / "staging", db = dir / "daemon.db";
  fs::create_directories(root);
  fs::create_directories(staging);
  std::mt19937 rng(20240601);

  // Before the daemon starts.
  auto a0 = NewFile(EventPath(root + "/run-a", 0), 0, 150, rng);
  auto b0 = NewFile(EventPath(root + "/run-b", 0), 0, 100, rng);
  auto c0 = NewFile(EventPath(root + "/run-c", 0), 0, 300, rng);  // truncated and rewritten
  auto d0 = NewFile(EventPath(root + "/run-d", 0), 0, 120, rng);  // replaced by a rename

  std::vector<std::string> args = {"--logdir", root, "--db", db};
  args.insert(args.end(), flags.begin(), flags.end());
  DaemonProcess daemon(args, dir / "daemon.log");
  std::string why;
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}, &why); }, 15s))
      << "initial backfill never completed:" << why << LogOf(daemon);

  // Appends in chunks to an existing file.
  AppendInChunks(*a0, 150, 230, 10, rng);

  // One record split across two writes, first inside its length header, then inside its
  // payload: the daemon must wait for the last byte, never store half a record.
  a0->Add(SimpleScalarEvent("train/loss", 230, kWall0 + 230 * 0.25, 0.5f));
  const size_t record = a0->buffered();
  a0->FlushPartial(5);
  Pause(200ms);
  a0->FlushPartial(record / 2);
  Pause(200ms);
  a0->Flush();

  // A new run, created in the root while watched.
  auto n0 = NewFile(EventPath(root + "/run-new", 0), 0, 40, rng);
  AppendInChunks(*n0, 40, 100, 20, rng);

  // A run directory made elsewhere with its files already in it, then moved into the root;
  // and a nested one (group/sub), so the daemon must watch a moved-in tree.
  NewFile(EventPath(staging + "/run-moved", 0), 0, 60, rng);
  NewFile(EventPath(staging + "/run-moved", 1), 60, 90, rng, kWall0 + 100);
  NewFile(EventPath(staging + "/group/sub", 0), 0, 50, rng);
  fs::rename(staging + "/run-moved", root + "/run-moved");
  fs::rename(staging + "/group", root + "/group");
  // Written to after the move: the moved-in tree (down to group/sub) must be watched.
  Pause(50ms);
  for (int64_t step = 50; step < 70; step += 5) {
    std::string more;
    for (int64_t s = step; s < step + 5; ++s)
      tfrecord::AppendRecord(&more, SimpleScalarEvent("train/loss", s, kWall0 + s * 0.25, 1.5f));
    AppendFile(EventPath(root + "/group/sub", 0), more);
    Pause(15ms);
  }

  // A new file in an existing run: the writer restarted and continues the steps.
  auto b1 = NewFile(EventPath(root + "/run-b", 1), 100, 120, rng, kWall0 + 1000);
  AppendInChunks(*b1, 120, 180, 15, rng, kWall0 + 1000);

  // Truncate and rewrite run-c (a re-run from scratch into the same file, with fewer bytes
  // than before so that it is visibly a new file whenever the daemon looks).
  std::string c_path = c0->path();
  c0.reset();
  {
    EventFileWriter c(c_path);  // truncates
    Pause(100ms);
    c.Add(FileVersionEvent(kWall0 + 5000));
    AddSteps(c, 0, 40, rng, kWall0 + 5000);
    c.Flush();
    Pause(50ms);
    AddSteps(c, 40, 80, rng, kWall0 + 5000);
    c.Flush();
  }

  // Replace run-d's file: write a temporary file, rename it over the old one.
  {
    EventFileWriter tmp(root + "/run-d/replacement.tmp");
    tmp.Add(FileVersionEvent(kWall0 + 6000));
    AddSteps(tmp, 0, 70, rng, kWall0 + 6000);
    tmp.Flush();
    fs::rename(tmp.path(), d0->path());
  }

  // Last appends.
  AppendInChunks(*n0, 100, 130, 10, rng);
  AppendInChunks(*a0, 231, 260, 10, rng);

  // What a one-shot ingest of the final files gives.
  ASSERT_NO_FATAL_FAILURE(OneShotIngest({root}, dir / "oneshot.db"));
  const std::optional<Dump> want = DumpLiveScalars(dir / "oneshot.db");
  ASSERT_TRUE(want.has_value());
  ASSERT_GT(want->size(), 1000u);

  std::optional<Dump> got;
  const bool converged = WaitFor(
      [&] {
        if (!AllCommitted(db, {root}, &why)) return false;
        got = DumpLiveScalars(db);
        return got && *got == *want;
      },
      20s);
  ASSERT_TRUE(converged) << "not converged; uncommitted:" << why << "\nlive points: "
                         << (got ? DiffSummary(*got, *want) : std::string("unreadable"))
                         << LogOf(daemon);

  // Nothing went wrong reading: no half record was ever taken for a broken one.
  EXPECT_EQ(Count(db, "SELECT count(*) FROM ingest_errors"), 0)
      << ::testing::PrintToString(SortedRows(db, "SELECT path, offset, kind, detail FROM "
                                                 "ingest_errors"));
  // The truncated and the replaced file each started a second generation.
  EXPECT_EQ(Count(db, "SELECT count(*) FROM sources WHERE path = " + ShellQuote(c_path) +
                          " AND status = 'replaced'"),
            1);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM sources WHERE path = " + ShellQuote(d0->path()) +
                          " AND status = 'replaced'"),
            1);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM run_events WHERE kind = 'file_replaced'"), 2);

  daemon.Signal(SIGTERM);
  std::optional<int> status = daemon.Wait(5s);
  ASSERT_TRUE(status.has_value()) << "no exit within 5 s of SIGTERM" << LogOf(daemon);
  EXPECT_EQ(Describe(*status), "exit 0") << LogOf(daemon);
}

TEST(Daemon, ConvergesToOneShotIngestWithInotify) {
  ConvergenceScenario({"--rescan-interval", "30"});
}

TEST(Daemon, ConvergesWithRescanOnly) {
  ConvergenceScenario({"--no-inotify", "--rescan-interval", "0.2"});
}

// ---------------------------------------------------------------------------------------------
// Crashes and stops

// kill -9 at random moments of a backfill, twenty times over, then one run to completion: the
// store must equal a one-shot ingest of the same files, row for row (nothing lost, nothing read
// twice). Small batches (10 points) and turns (64 KiB) put thousands of commit points, and turns
// across files, into the backfill, and make it last about as long as the kills do (~5 s), so
// nearly every kill lands in the middle of it.
TEST(Daemon, KillNineDuringBackfillLosesAndDoublesNothing) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db", log = dir / "daemon.log";
  auto writers = MakeBacklog(root, 20, 1500 << 10, 11);
  WriteFile(dir / "trainwatch.toml",
            "[ingest]\nbatch_points = 10\nmax_bytes_per_turn = 65536\n");
  const std::vector<std::string> args = {"--config", dir / "trainwatch.toml", "--logdir", root,
                                         "--db", db, "--rescan-interval", "30"};

  std::mt19937 rng(424242);
  std::uniform_int_distribution<int> delay_ms(50, 600);
  std::uniform_int_distribution<size_t> pick(0, writers.size() - 1);
  std::uniform_real_distribution<float> value(0.0f, 1.0f);
  int64_t next_step = 1000000;
  int killed_mid_backfill = 0;
  constexpr int kKills = 20;
  for (int i = 0; i < kKills; ++i) {
    DaemonProcess d(args, log);
    Pause(std::chrono::milliseconds(delay_ms(rng)));
    const int status = d.KillAndReap();
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "iteration " << i << ": the daemon was not running when killed (" << Describe(status)
        << ")" << LogOf(d);
    if (LagBytes(db, {root}) > 65536) ++killed_mid_backfill;  // more than partial tails
    // A few more records in a few files, the last of them cut short (the next append
    // completes it), so restarts also meet growing files and records split across writes.
    for (int k = 0; k < 3; ++k) {
      EventFileWriter& w = *writers[pick(rng)];
      for (int s = 0; s < 500; ++s, ++next_step)
        w.Add(SimpleScalarEvent("train/loss", next_step,
                                kWall0 + 1e6 + static_cast<double>(next_step), value(rng)));
      w.FlushPartial(w.buffered() - 7);
    }
  }
  for (auto& w : writers) w->Flush();  // every record complete
  // Kills must have hit the daemon in the middle of the backfill, or this tested little (here
  // 18 of 20 do; a much faster machine reads the backlog sooner, hence the margin).
  EXPECT_GE(killed_mid_backfill, 4);

  // The last start runs to completion and stops cleanly.
  DaemonProcess d(args, log);
  std::string why;
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}, &why); }, 60s))
      << "never caught up:" << why << LogOf(d);
  d.Signal(SIGTERM);
  std::optional<int> status = d.Wait(5s);
  ASSERT_TRUE(status.has_value()) << LogOf(d);
  EXPECT_EQ(Describe(*status), "exit 0") << LogOf(d);

  ASSERT_NO_FATAL_FAILURE(OneShotIngest({root}, dir / "oneshot.db"));
  const Dump want = FullDump(dir / "oneshot.db");
  const Dump got = FullDump(db);
  EXPECT_GT(want.size(), 500000u);
  EXPECT_TRUE(got == want) << DiffSummary(got, want);
}

TEST(Daemon, SigtermUnderLoadExitsWithinFiveSecondsWithEverythingCommitted) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db", log = dir / "daemon.log";
  MakeBacklog(root, 20, 1500 << 10, 12);
  const std::vector<std::string> args = {"--logdir", root, "--db", db, "--rescan-interval", "30"};
  {
    DaemonProcess d(args, log);
    ASSERT_TRUE(d.WaitForLog("initial scan", 10s)) << LogOf(d);
    // ~300 ms into the backfill; sooner if a fast machine has already read half of it.
    const int64_t total = LagBytes(db, {root});
    WaitFor([&] { return LagBytes(db, {root}) < total / 2; }, 300ms, 10ms);
    const auto t0 = std::chrono::steady_clock::now();
    d.Signal(SIGTERM);
    std::optional<int> status = d.Wait(5s);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(status.has_value()) << "still running 5 s after SIGTERM" << LogOf(d);
    EXPECT_EQ(Describe(*status), "exit 0") << LogOf(d);
    EXPECT_LT(took, 5.0);
    EXPECT_NE(d.Log().find("SIGTERM, stopping"), std::string::npos) << LogOf(d);
    // It was stopped in the middle of the backlog, or this tested nothing.
    EXPECT_GT(LagBytes(db, {root}), 0) << "the backlog was read in full before SIGTERM";
    EXPECT_EQ(SortedRows(db, "SELECT value FROM daemon_state WHERE key = 'phase'"),
              std::vector<std::string>{"stopped"});
  }
  // A second start finishes the job: nothing lost, nothing doubled.
  DaemonProcess d(args, log);
  std::string why;
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}, &why); }, 60s))
      << "never caught up:" << why << LogOf(d);
  d.Signal(SIGTERM);
  std::optional<int> status = d.Wait(5s);
  ASSERT_TRUE(status.has_value()) << LogOf(d);
  EXPECT_EQ(Describe(*status), "exit 0") << LogOf(d);
  ASSERT_NO_FATAL_FAILURE(OneShotIngest({root}, dir / "oneshot.db"));
  const Dump want = FullDump(dir / "oneshot.db");
  const Dump got = FullDump(db);
  EXPECT_TRUE(got == want) << DiffSummary(got, want);
}

// ---------------------------------------------------------------------------------------------
// SIGHUP

void WriteConfig(const std::string& path, const std::string& roots, const std::string& extra = "") {
  WriteFile(path, "[store]\npath = \"daemon.db\"\n\n[watch]\nroots = [" + roots +
                      "]\nrescan_interval_seconds = 30\n" + extra);
}

TEST(Daemon, SighupAppliesAGoodConfigAndRejectsABadOne) {
  TempDir dir;
  const std::string a = dir / "A", b = dir / "B", cfg = dir / "trainwatch.toml",
                    db = dir / "daemon.db";
  std::mt19937 rng(5);
  auto wa = NewFile(EventPath(a + "/run-a", 0), 0, 50, rng);
  auto wb = NewFile(EventPath(b + "/run-b", 0), 0, 30, rng);
  WriteConfig(cfg, "\"A\"");
  DaemonProcess d({"--config", cfg}, dir / "daemon.log");
  ASSERT_TRUE(d.WaitForLog("initial scan", 10s)) << LogOf(d);
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {a}); }, 10s)) << LogOf(d);
  auto run_points = [&](const std::string& run) {
    return Count(db, "SELECT count(*) FROM scalar_points WHERE run = " + ShellQuote(run));
  };
  EXPECT_EQ(run_points("run-a"), 100);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM runs WHERE name = 'run-b'"), 0);

  // A good config adds B: its points appear.
  WriteConfig(cfg, "\"A\", \"B\"");
  d.Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] { return run_points("run-b") == 60; }, 10s))
      << "B's points never appeared after SIGHUP" << LogOf(d);
  EXPECT_TRUE(d.WaitForLog("reload: configuration from", 5s)) << LogOf(d);
  EXPECT_TRUE(AllCommitted(db, {a, b}));

  // A bad one (a misspelt key) is rejected, naming the file, line and key; the daemon lives on
  // with the configuration it has.
  WriteConfig(cfg, "\"A\", \"B\"", "rescan_intervall = 5\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLog("reload rejected", 10s)) << LogOf(d);
  const std::string log = d.Log();
  EXPECT_NE(log.find(cfg + ":7: unknown key 'rescan_intervall'"), std::string::npos) << log;
  EXPECT_FALSE(d.Wait(0ms).has_value()) << "the daemon exited on a bad reload" << LogOf(d);

  // Still watching both roots with the old configuration.
  AppendInChunks(*wa, 50, 70, 10, rng);
  AppendInChunks(*wb, 30, 45, 5, rng);
  ASSERT_TRUE(WaitFor([&] { return run_points("run-a") == 140 && run_points("run-b") == 90; },
                      10s))
      << "points appended after the rejected reload were not ingested: run-a "
      << run_points("run-a") << ", run-b " << run_points("run-b") << LogOf(d);

  d.Signal(SIGTERM);
  std::optional<int> status = d.Wait(5s);
  ASSERT_TRUE(status.has_value()) << LogOf(d);
  EXPECT_EQ(Describe(*status), "exit 0") << LogOf(d);
}

// ---------------------------------------------------------------------------------------------
// sd_notify

TEST(Daemon, NotifyProtocol) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db";
  std::mt19937 rng(6);
  NewFile(EventPath(root + "/run-a", 0), 0, 100, rng);
  NotifySocket sock(dir / "notify.sock");
  DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "30"}, dir / "daemon.log",
                  {"NOTIFY_SOCKET=" + sock.path(), "WATCHDOG_USEC=200000"});

  std::vector<std::string> seen;
  std::optional<std::string> ready = sock.WaitForLine("READY=1", 10s, &seen);
  ASSERT_TRUE(ready.has_value()) << "no READY=1; got " << ::testing::PrintToString(seen)
                                 << LogOf(d);
  // READY only once the initial scan is set up (and logged).
  EXPECT_NE(d.Log().find("initial scan"), std::string::npos) << LogOf(d);
  EXPECT_NE(ready->find("STATUS="), std::string::npos) << *ready;

  // Watchdog pings every WATCHDOG_USEC/2 = 100 ms: about 15 in 1.5 s.
  int pings = 0;
  const auto until = std::chrono::steady_clock::now() + 1500ms;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::optional<std::string> m = sock.Receive(left);
    if (!m) break;
    if (HasLine(*m, "WATCHDOG=1")) ++pings;
    EXPECT_FALSE(HasLine(*m, "READY=1")) << "a second READY=1 without a reload: " << *m;
  }
  EXPECT_GE(pings, 5) << LogOf(d);
  EXPECT_LE(pings, 30);

  // SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1.
  d.Signal(SIGHUP);
  std::optional<std::string> reloading = sock.WaitForLine("RELOADING=1", 5s);
  ASSERT_TRUE(reloading.has_value()) << LogOf(d);
  EXPECT_NE(reloading->find("MONOTONIC_USEC="), std::string::npos) << *reloading;
  EXPECT_TRUE(sock.WaitForLine("READY=1", 5s).has_value()) << LogOf(d);

  // SIGTERM: STOPPING=1, then a clean exit.
  d.Signal(SIGTERM);
  EXPECT_TRUE(sock.WaitForLine("STOPPING=1", 5s).has_value()) << LogOf(d);
  std::optional<int> status = d.Wait(5s);
  ASSERT_TRUE(status.has_value()) << LogOf(d);
  EXPECT_EQ(Describe(*status), "exit 0") << LogOf(d);
}

// ---------------------------------------------------------------------------------------------
// File and run lifecycle

TEST(Daemon, DeletedFileKeepsItsPointsMarkedGone) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db";
  std::mt19937 rng(7);
  auto f0 = NewFile(EventPath(root + "/run-a", 0), 0, 50, rng);
  auto f1 = NewFile(EventPath(root + "/run-a", 1), 50, 80, rng);
  DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "30"}, dir / "daemon.log");
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}); }, 10s)) << LogOf(d);
  const std::optional<Dump> before = DumpLiveScalars(db);
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->size(), 160u);

  fs::remove(f1->path());
  const std::string gone = "SELECT count(*) FROM sources WHERE path = " + ShellQuote(f1->path()) +
                           " AND status = 'gone'";
  ASSERT_TRUE(WaitFor([&] { return Count(db, gone) == 1; }, 10s)) << LogOf(d);
  EXPECT_EQ(DumpLiveScalars(db), before) << "a deleted file's points must stay (live)";
  EXPECT_EQ(Count(db, "SELECT count(*) FROM run_events WHERE kind = 'file_gone'"), 1);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM sources WHERE status = 'active'"), 1);
  EXPECT_NE(d.Log().find("file gone (its points are kept): " + f1->path()), std::string::npos)
      << LogOf(d);

  // The surviving file is still followed.
  AppendInChunks(*f0, 100, 110, 10, rng);
  EXPECT_TRUE(WaitFor([&] { return Count(db, "SELECT count(*) FROM scalar_points") == 180; }, 10s))
      << LogOf(d);
}

// A run re-done from scratch into the same file (truncated and rewritten, or replaced by a
// rename) is a new generation of that file: its old points are superseded, and that is all.
// It is not a writer going back to a checkpoint, which is what a one-shot ingest of the same
// files says too (no restart event).
TEST(Daemon, ReplacedFileIsANewGenerationNotAWriterRestart) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db";
  std::mt19937 rng(12);
  auto t = NewFile(EventPath(root + "/truncated", 0), 0, 100, rng);
  auto r = NewFile(EventPath(root + "/replaced", 0), 0, 100, rng);
  DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "30"}, dir / "daemon.log");
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}); }, 10s)) << LogOf(d);

  const std::string t_path = t->path();
  t.reset();
  NewFile(t_path, 0, 30, rng, kWall0 + 5000);  // truncates, then writes the re-run
  NewFile(root + "/replaced/new.tmp", 0, 30, rng, kWall0 + 5000);
  fs::rename(root + "/replaced/new.tmp", r->path());

  ASSERT_NO_FATAL_FAILURE(OneShotIngest({root}, dir / "oneshot.db"));
  const std::optional<Dump> want = DumpLiveScalars(dir / "oneshot.db");
  ASSERT_TRUE(want.has_value());
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}) && DumpLiveScalars(db) == want; }, 10s))
      << LogOf(d);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM run_events WHERE kind = 'file_replaced'"), 2);
  EXPECT_EQ(SortedRows(db, "SELECT r.name, e.detail FROM run_events e JOIN runs r USING (run_id) "
                           "WHERE e.kind = 'restart'"),
            SortedRows(dir / "oneshot.db", "SELECT r.name, e.detail FROM run_events e JOIN runs r "
                                           "USING (run_id) WHERE e.kind = 'restart'"))
      << LogOf(d);
  EXPECT_EQ(d.Log().find("the writer restarted from a checkpoint"), std::string::npos) << LogOf(d);
}

// Renames a run directory under a running daemon started with `flags`; the run row must be
// renamed with its points and offsets, nothing read twice, and the file still followed.
void RenamedRunScenario(const std::vector<std::string>& flags) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db";
  std::mt19937 rng(8);
  auto f0 = NewFile(EventPath(root + "/run-a", 0), 0, 100, rng);
  NewFile(EventPath(root + "/run-a", 1), 100, 150, rng);
  NewFile(EventPath(root + "/other", 0), 0, 10, rng);
  std::vector<std::string> args = {"--logdir", root, "--db", db};
  args.insert(args.end(), flags.begin(), flags.end());
  DaemonProcess d(args, dir / "daemon.log");
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}); }, 10s)) << LogOf(d);
  const std::string sources_sql =
      "SELECT source_id, replace(path, '/run-a/', '/run-z/'), generation, committed_offset, "
      "records, status FROM sources";
  const std::vector<std::string> sources_before = SortedRows(db, sources_sql);
  const int64_t points_before = Count(db, "SELECT count(*) FROM scalars");
  ASSERT_EQ(points_before, 2 * 150 + 2 * 10);

  // run-z sorts after run-a: a rescan lists the old paths (gone) before the new ones.
  fs::rename(root + "/run-a", root + "/run-z");
  const std::vector<std::string> renamed = {"other", "run-z"};
  ASSERT_TRUE(WaitFor([&] { return SortedRows(db, "SELECT name FROM runs") == renamed; }, 10s))
      << ::testing::PrintToString(SortedRows(db, "SELECT name FROM runs")) << LogOf(d);
  // Give the daemon every chance to (wrongly) read the files again: wait until it is idle
  // with every file committed under its new path.
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}); }, 10s)) << LogOf(d);
  Pause(600ms);  // several rescan intervals in the rescan-only mode; not an assertion
  EXPECT_EQ(SortedRows(db, "SELECT name FROM runs"), renamed);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM scalars"), points_before);
  EXPECT_EQ(SortedRows(db, sources_sql), sources_before);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM scalar_points WHERE run = 'run-z'"), 300);

  // The moved file is followed at its new path.
  const std::string moved = root + "/run-z/" + fs::path(f0->path()).filename().native();
  std::string more;
  for (int64_t step = 150; step < 160; ++step)
    tfrecord::AppendRecord(&more, SimpleScalarEvent("train/loss", step, kWall0 + step, 1.0f));
  AppendFile(moved, more);
  EXPECT_TRUE(WaitFor([&] { return Count(db, "SELECT count(*) FROM scalars") == points_before + 10; },
                      10s))
      << LogOf(d);
  EXPECT_TRUE(AllCommitted(db, {root}));
  EXPECT_EQ(Count(db, "SELECT count(*) FROM sources"), 3);
}

TEST(Daemon, RenamedRunDirectoryIsFollowedNotDoubled) {
  RenamedRunScenario({"--rescan-interval", "30"});
}

TEST(Daemon, RenamedRunDirectoryIsFollowedNotDoubledWithRescanOnly) {
  RenamedRunScenario({"--no-inotify", "--rescan-interval", "0.2"});
}

// A single file moved from one run directory to another (docs/daemon.md: "followed the same
// way (file_moved)"): one source, same id and offset, its points not read again.
TEST(Daemon, MovedFileIsFollowedNotDoubled) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db";
  std::mt19937 rng(13);
  auto f = NewFile(EventPath(root + "/run-a", 0), 0, 100, rng);
  NewFile(EventPath(root + "/run-b", 0), 0, 10, rng);
  DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "30"}, dir / "daemon.log");
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}); }, 10s)) << LogOf(d);
  const std::string moved = EventPath(root + "/run-b", 1);
  const std::string source_sql =
      "SELECT source_id, generation, committed_offset, records FROM sources WHERE path = ";
  const std::vector<std::string> before = SortedRows(db, source_sql + ShellQuote(f->path()));
  ASSERT_EQ(before.size(), 1u);
  const int64_t points = Count(db, "SELECT count(*) FROM scalars");

  fs::rename(f->path(), moved);
  ASSERT_TRUE(WaitFor([&] { return SortedRows(db, source_sql + ShellQuote(moved)).size() == 1; }, 10s))
      << LogOf(d);
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}); }, 10s)) << LogOf(d);
  EXPECT_EQ(SortedRows(db, source_sql + ShellQuote(moved)), before) << "not the same source";
  EXPECT_EQ(Count(db, "SELECT count(*) FROM sources"), 2) << ::testing::PrintToString(
      SortedRows(db, "SELECT source_id, path, status, committed_offset FROM sources"));
  EXPECT_EQ(Count(db, "SELECT count(*) FROM scalars"), points) << "the moved file was read again";
  EXPECT_EQ(Count(db, "SELECT count(*) FROM run_events WHERE kind = 'file_moved'"), 1);
}

// Renamed while the daemon was stopped: the restart's initial scan follows the run.
TEST(Daemon, RunRenamedWhileStoppedIsFollowedOnRestart) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db";
  std::mt19937 rng(14);
  NewFile(EventPath(root + "/run-a", 0), 0, 100, rng);
  const std::vector<std::string> args = {"--logdir", root, "--db", db, "--rescan-interval", "30"};
  {
    DaemonProcess d(args, dir / "daemon.log");
    ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}); }, 10s)) << LogOf(d);
    d.Signal(SIGTERM);
    ASSERT_TRUE(d.Wait(5s).has_value()) << LogOf(d);
  }
  const int64_t points = Count(db, "SELECT count(*) FROM scalars");
  fs::rename(root + "/run-a", root + "/run-z");
  DaemonProcess d(args, dir / "daemon.log");
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}); }, 10s)) << LogOf(d);
  EXPECT_EQ(SortedRows(db, "SELECT name FROM runs"), std::vector<std::string>{"run-z"});
  EXPECT_EQ(Count(db, "SELECT count(*) FROM scalars"), points);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM sources"), 1);
}

// A file deleted while the daemon was stopped is marked gone by the restart's initial scan,
// as one deleted while it runs is; and a new file that the filesystem happens to give the
// deleted file's inode number (ext4 reuses them at once) is a new file, read in full.
TEST(Daemon, FileDeletedWhileStoppedIsGoneAndItsInodeNumberIsNotItsIdentity) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db";
  std::mt19937 rng(15);
  auto old_file = NewFile(EventPath(root + "/run-a", 0), 0, 100, rng);
  const std::vector<std::string> args = {"--logdir", root, "--db", db, "--rescan-interval", "30"};
  {
    DaemonProcess d(args, dir / "daemon.log");
    ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}); }, 10s)) << LogOf(d);
    d.Signal(SIGTERM);
    ASSERT_TRUE(d.Wait(5s).has_value()) << LogOf(d);
  }
  struct stat st;
  ASSERT_EQ(::stat(old_file->path().c_str(), &st), 0);
  const ino_t old_ino = st.st_ino;
  // The writer restarts: the old file is deleted, a new one (more steps, later) is written.
  fs::remove(old_file->path());
  auto new_file = NewFile(EventPath(root + "/run-a", 1), 0, 150, rng, kWall0 + 5000);
  ASSERT_EQ(::stat(new_file->path().c_str(), &st), 0);
  const bool inode_reused = st.st_ino == old_ino;

  DaemonProcess d(args, dir / "daemon.log");
  std::string why;
  ASSERT_TRUE(WaitFor([&] { return AllCommitted(db, {root}, &why); }, 10s))
      << why << LogOf(d) << (inode_reused ? "\n(the new file has the old file's inode number)" : "");
  EXPECT_TRUE(WaitFor(
      [&] {
        return Count(db, "SELECT count(*) FROM sources WHERE path = " + ShellQuote(old_file->path()) +
                             " AND status = 'gone'") == 1;
      },
      5s))
      << "the file deleted while stopped is still 'active': "
      << ::testing::PrintToString(SortedRows(db, "SELECT path, status FROM sources")) << LogOf(d);
  // Every point of the new file is there, live, read from its first byte.
  EXPECT_EQ(Count(db, "SELECT count(*) FROM scalar_points WHERE wall_time >= " +
                          std::to_string(kWall0 + 5000)),
            300)
      << (inode_reused ? "(the new file has the old file's inode number)" : "") << LogOf(d);
  EXPECT_EQ(Count(db, "SELECT count(*) FROM ingest_errors"), 0)
      << ::testing::PrintToString(SortedRows(db, "SELECT path, offset, kind FROM ingest_errors"));
}

// ---------------------------------------------------------------------------------------------
// trainwatch status

int64_t JsonInt(const std::string& json, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = json.find(k);
  if (at == std::string::npos) return -1;
  return std::stoll(json.substr(at + k.size()));
}

TEST(Daemon, StatusReportsRootsRunsAndLag) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db";
  std::mt19937 rng(10);
  auto f = NewFile(EventPath(root + "/run-a", 0), 0, 100, rng);
  NewFile(EventPath(root + "/run-b", 0), 0, 50, rng);
  const std::vector<std::string> args = {"--logdir", root, "--db", db, "--rescan-interval", "30"};
  const std::string status_cmd = std::string(TW_CLI_BINARY) + " status --db " + ShellQuote(db);
  {
    DaemonProcess d(args, dir / "daemon.log");
    ASSERT_TRUE(WaitFor(
        [&] {
          std::string out;
          return RunCommand(status_cmd + " --json", &out) == 0 &&
                 out.find("\"phase\":\"live\"") != std::string::npos &&
                 JsonInt(out, "lag_bytes") == 0 && JsonInt(out, "scalar_points") == 300;
        },
        10s))
        << LogOf(d);
    std::string out;
    ASSERT_EQ(RunCommand(status_cmd, &out), 0) << out;
    EXPECT_NE(out.find("daemon:      live (pid " + std::to_string(d.pid()) + ")"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("root:        " + root + "\n"), std::string::npos) << out;
    EXPECT_NE(out.find("runs:        2 ("), std::string::npos) << out;
    EXPECT_NE(out.find("inotify:     on"), std::string::npos) << out;
    EXPECT_NE(out.find("lag:         0 B in 0 files"), std::string::npos) << out;
    ASSERT_EQ(RunCommand(status_cmd + " --json", &out), 0) << out;
    EXPECT_NE(out.find("\"roots\":[\"" + root + "\"]"), std::string::npos) << out;
    EXPECT_NE(out.find("\"pid\":\"" + std::to_string(d.pid()) + "\""), std::string::npos) << out;
    EXPECT_EQ(JsonInt(out, "runs"), 2) << out;
    EXPECT_EQ(JsonInt(out, "series"), 4) << out;
    EXPECT_NE(out.find("\"sources\":{\"active\":2}"), std::string::npos) << out;
    d.Signal(SIGTERM);
    std::optional<int> status = d.Wait(5s);
    ASSERT_TRUE(status.has_value()) << LogOf(d);
    EXPECT_EQ(Describe(*status), "exit 0");
  }
  // Stopped, with new bytes written: the lag shows them.
  AddSteps(*f, 100, 110, rng);
  const int64_t appended = static_cast<int64_t>(f->buffered());
  f->Flush();
  std::string out;
  ASSERT_EQ(RunCommand(status_cmd + " --json", &out), 0) << out;
  EXPECT_NE(out.find("\"phase\":\"stopped\""), std::string::npos) << out;
  EXPECT_EQ(JsonInt(out, "lag_bytes"), appended) << out;
  EXPECT_EQ(JsonInt(out, "lag_files"), 1) << out;
  // Started again, it drains the lag to 0.
  DaemonProcess d(args, dir / "daemon.log");
  EXPECT_TRUE(WaitFor(
      [&] {
        return RunCommand(status_cmd + " --json", &out) == 0 && JsonInt(out, "lag_bytes") == 0 &&
               JsonInt(out, "scalar_points") == 320;
      },
      10s))
      << out << LogOf(d);
}

}  // namespace
}  // namespace tw

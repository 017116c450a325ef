// Console logs named by the daemon's config ([[console]] glob = "..."), with `trainwatch daemon`
// as a real process: a log that appears or grows where a glob points, outside every logdir, is
// read at the next rescan into its own run (its path without the extension, relative to the
// glob's directory before its first wildcard); kill -9 at random moments while a real log grows
// loses and doubles nothing; a profile that does not load refuses a start and a reload, naming
// its file. Every wait polls with a deadline; children are always killed and reaped.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/daemon_process.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string LogOf(const DaemonProcess& d) { return "\n--- daemon stderr ---\n" + d.Log(); }

std::string Describe(int wait_status) {
  if (WIFEXITED(wait_status)) return "exit " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return "signal " + std::to_string(WTERMSIG(wait_status));
  return "wait status " + std::to_string(wait_status);
}

// Rows of `sql`, sorted; nullopt while the store cannot be read.
std::optional<std::vector<std::string>> Rows(const std::string& db_path, const std::string& sql) {
  auto out = testing::QueryRows(db_path, sql);
  if (out) std::sort(out->begin(), out->end());
  return out;
}

// A quoted SQL string literal (the paths here hold no quote, for which sh and SQL differ).
std::string Quote(const std::string& s) { return ShellQuote(s); }

// nanoGPT's training line for step `n`.
std::string IterLine(int n) {
  char line[96];
  std::snprintf(line, sizeof line, "iter %d: loss %.4f, time 10.0ms, mfu 1.00%%\n", n, 4.0 - n * 0.01);
  return line;
}
std::string IterLines(int from, int to) {
  std::string out;
  for (int n = from; n < to; ++n) out += IterLine(n);
  return out;
}

// Points of `tag` stored for `run`, or -1 while the store cannot be read.
int64_t Points(const std::string& db, const std::string& run, const std::string& tag = "loss") {
  return QueryInt(db, "SELECT count(*) FROM scalar_points WHERE run = " + Quote(run) + " AND tag = " + Quote(tag));
}

// How many rescans the daemon logged as finding files changed (with [log] verbose).
size_t ChangedRescans(const std::string& log) {
  size_t n = 0;
  for (size_t at = 0; (at = log.find("files changed", at)) != std::string::npos; ++at) ++n;
  return n;
}

// (a) A glob outside the logdir: a log that appears after the start, in a directory made after
// the start, and one that grows, each in its own run named by its path without the extension
// relative to the glob's root; what the glob does not match is not read; a symlink out of the
// glob's root is refused; an unchanged log is not posted again at every rescan.
TEST(DaemonConsole, AGlobOutsideTheLogdirIsReadAsLogsAppearAndGrow) {
  TempDir dir;
  const std::string base = fs::canonical(dir.path()).native();
  const std::string logs = base + "/logs", scratch = base + "/scratch", db = base + "/daemon.db",
                    cfg = base + "/trainwatch.toml";
  fs::create_directories(logs);
  fs::create_directories(scratch + "/job1");
  WriteFile(base + "/outside/secret.out", IterLines(0, 5));
  const std::string glob = scratch + "/*/slurm-*.out";
  WriteFile(cfg, "[store]\npath = \"daemon.db\"\n[watch]\nroots = [\"logs\"]\nrescan_interval_seconds = 0.2\n"
                 "[log]\nverbose = true\n\n[[console]]\nglob = \"" + glob + "\"\n");
  DaemonProcess d({"--config", cfg}, base + "/daemon.log");
  ASSERT_TRUE(d.WaitForLog("initial scan", 10s)) << LogOf(d);
  EXPECT_NE(d.Log().find("console logs " + glob), std::string::npos) << LogOf(d);

  // Appears after the start, then grows (the last line first cut short: read when whole).
  const std::string one = scratch + "/job1/slurm-1.out";
  WriteFile(one, "starting training\n" + IterLines(0, 10));
  WriteFile(scratch + "/job1/notes.out", IterLines(0, 3));  // not slurm-*.out: not read
  ASSERT_TRUE(WaitFor([&] { return Points(db, "job1/slurm-1") == 10; }, 10s))
      << "the new log was not read: " << Points(db, "job1/slurm-1") << " points" << LogOf(d);
  const std::string more = IterLines(10, 20);
  AppendFile(one, more.substr(0, more.size() - 7));
  ASSERT_TRUE(WaitFor([&] { return Points(db, "job1/slurm-1") == 19; }, 10s))
      << "the appended lines were not read: " << Points(db, "job1/slurm-1") << LogOf(d);
  AppendFile(one, more.substr(more.size() - 7));
  ASSERT_TRUE(WaitFor([&] { return Points(db, "job1/slurm-1") == 20; }, 10s))
      << "the completed line was not read: " << Points(db, "job1/slurm-1") << LogOf(d);

  // A directory made after the start, a log in it; and a symlink out of the glob's root.
  WriteFile(scratch + "/job2/slurm-2.out", IterLines(0, 7));
  fs::create_directories(scratch + "/job3");
  fs::create_symlink(base + "/outside/secret.out", scratch + "/job3/slurm-3.out");
  ASSERT_TRUE(WaitFor([&] { return Points(db, "job2/slurm-2") == 7; }, 10s))
      << Points(db, "job2/slurm-2") << LogOf(d);
  ASSERT_TRUE(WaitFor([&] {
    return QueryInt(db, "SELECT count(*) FROM ingest_errors WHERE kind = 'outside_root' AND path = " +
                            Quote(scratch + "/job3/slurm-3.out")) == 1;
  }, 10s)) << LogOf(d);

  // What it stored, and under which runs.
  EXPECT_EQ(Rows(db, "SELECT tag, step, printf('%.4f', value) FROM scalar_points WHERE run = 'job1/slurm-1' AND "
                     "step IN (0, 19)"),
            (std::vector<std::string>{"loss|0|4.0000", "loss|19|3.8100", "mfu|0|1.0000", "mfu|19|1.0000",
                                      "time|0|10.0000", "time|19|10.0000"}));
  EXPECT_EQ(Rows(db, "SELECT root, name FROM runs WHERE name LIKE 'job%'"),
            (std::vector<std::string>{scratch + "|job1/slurm-1", scratch + "|job2/slurm-2", scratch + "|job3/slurm-3"}));
  EXPECT_EQ(Rows(db, "SELECT path, status FROM sources"),
            (std::vector<std::string>{one + "|active", scratch + "/job2/slurm-2.out|active",
                                      scratch + "/job3/slurm-3.out|rejected"}));
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM scalar_points WHERE run = 'job3/slurm-3'"), 0);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM ingest_errors"), 1);

  // Nothing changes: five rescans later no file was posted again.
  const size_t changed = ChangedRescans(d.Log());
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(ChangedRescans(d.Log()), changed) << LogOf(d);

  std::string out;
  ASSERT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " status --db " + Quote(db), &out), 0) << out;
  EXPECT_NE(out.find("console:     " + glob + "\n"), std::string::npos) << out;

  std::optional<int> status = d.Stop(5s);
  ASSERT_TRUE(status.has_value()) << LogOf(d);
  EXPECT_EQ(Describe(*status), "exit 0") << LogOf(d);
}

// Every row DumpStore gives of scalars, sources, runs and errors: with the log's mtime pinned,
// a console point's wall time is the same however often the log was read.
std::vector<std::string> Dump(const std::string& db_path) {
  auto db = store::OpenReadOnly(db_path);
  if (!db.ok()) return {"<unreadable store: " + db.status().ToString() + ">"};
  std::vector<std::string> d;
  try {
    d = DumpStore(**db);
  } catch (const std::exception& e) {
    return {std::string("<dump failed: ") + e.what() + ">"};
  }
  for (const char* sql : {"SELECT 'run', root, name FROM runs",
                          "SELECT 'source', path, generation, committed_offset, records, status, error_count FROM sources",
                          "SELECT 'error', path, offset, kind FROM ingest_errors"})
    if (auto rows = Rows(db_path, sql)) d.insert(d.end(), rows->begin(), rows->end());
    else d.push_back(std::string("<unreadable: ") + sql + ">");
  std::sort(d.begin(), d.end());
  return d;
}

std::string DiffSummary(const std::vector<std::string>& got, const std::vector<std::string>& want) {
  std::vector<std::string> extra, missing;
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::string out = std::to_string(got.size()) + " lines vs " + std::to_string(want.size()) + " expected; " +
                    std::to_string(extra.size()) + " extra, " + std::to_string(missing.size()) + " missing";
  for (size_t i = 0; i < std::min<size_t>(extra.size(), 8); ++i) out += "\n  + " + extra[i];
  for (size_t i = 0; i < std::min<size_t>(missing.size(), 8); ++i) out += "\n  - " + missing[i];
  return out;
}

void PinMtime(const std::string& path) {
  const struct timespec t[2] = {{1700000000, 0}, {1700000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, 0), 0) << path;
}

// (b) kill -9 at random moments while real console logs (an HF Trainer's, tqdm bar and all:
// lines that wait for the bar drawn after them, state committed with the offset) grow in pieces
// cut anywhere, restarting the daemon each time; at the end its store equals a one-shot ingest
// of the final logs, row for row (points with their wall times: the logs' mtimes are pinned;
// sources with offsets and record counts; runs; errors). Several copies of the log, one point a
// commit and small turns give the kills many commit points to land between; every other kill
// waits for the daemon's first commit of what is new, to land in the middle of its reading.
TEST(DaemonConsole, KillNineWhileARealLogGrowsLosesAndDoublesNothing) {
  TempDir dir;
  const std::string base = fs::canonical(dir.path()).native();
  const std::string logs = base + "/logs", scratch = base + "/scratch", db = base + "/daemon.db",
                    cfg = base + "/trainwatch.toml";
  fs::create_directories(logs);
  fs::create_directories(scratch);
  const std::string glob = scratch + "/slurm-*.out";
  WriteFile(cfg, "[store]\npath = \"daemon.db\"\n[watch]\nroots = [\"logs\"]\nrescan_interval_seconds = 0.05\n"
                 "[ingest]\nbatch_points = 1\nmax_bytes_per_turn = 4096\n\n[[console]]\nglob = \"" + glob + "\"\n");
  const std::string bytes = ReadFile(std::string(TW_SOURCES_DIR) + "/console/hf_lr_nan.log");
  ASSERT_GT(bytes.size(), 10000u);

  // Each copy grows by its own cuts, anywhere (inside lines, inside the bar's multi-byte
  // characters); the last cut is the whole log.
  std::mt19937 rng(7301);
  constexpr int kKills = 16, kFiles = 24;
  std::vector<std::string> paths;
  std::vector<std::vector<size_t>> cuts(kFiles);
  std::uniform_int_distribution<size_t> at(1, bytes.size() - 1);
  for (int f = 0; f < kFiles; ++f) {
    paths.push_back(scratch + "/slurm-" + std::to_string(100 + f) + ".out");
    WriteFile(paths[f], "");
    for (int i = 0; i < kKills - 1; ++i) cuts[f].push_back(at(rng));
    std::sort(cuts[f].begin(), cuts[f].end());
    cuts[f].push_back(bytes.size());
  }
  std::uniform_int_distribution<int> delay_ms(5, 200);

  std::vector<size_t> written(kFiles, 0);
  auto committed = [&](int f) {
    return QueryInt(db, "SELECT committed_offset FROM sources WHERE status = 'active' AND path = " + Quote(paths[f]));
  };
  int killed_behind = 0;  // kills that found the store behind the logs (by more than a partial line)
  int killed_reading = 0;  // ... after this start had committed some of them: in the middle of reading
  for (int i = 0; i < kKills; ++i) {
    int64_t before = 0;
    for (int f = 0; f < kFiles; ++f) before += std::max<int64_t>(0, committed(f));
    for (int f = 0; f < kFiles; ++f) {
      AppendFile(paths[f], bytes.substr(written[f], cuts[f][i] - written[f]));
      written[f] = cuts[f][i];
      ASSERT_NO_FATAL_FAILURE(PinMtime(paths[f]));
    }
    DaemonProcess d({"--config", cfg}, base + "/daemon-" + std::to_string(i) + ".log");
    if (i % 2 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    } else {  // as soon as it has committed some of what is new: in the middle of its reading
      std::unique_ptr<store::Db> ro;  // one connection, polled without pause
      WaitFor([&] {
        if (!ro) {
          auto opened = store::OpenReadOnly(db);
          if (!opened.ok()) return false;
          ro = std::move(*opened);
        }
        auto q = ro->Prepare("SELECT coalesce(sum(committed_offset), 0) FROM sources WHERE status = 'active'");
        if (!q.ok()) return false;
        auto row = q->Step();
        return row.ok() && *row && q->Int(0) > before;
      }, 5s, 0ms);
    }
    const int status = d.KillAndReap();
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "iteration " << i << ": the daemon was not running when killed (" << Describe(status) << ")" << LogOf(d);
    bool behind = false;
    int64_t after = 0;
    for (int f = 0; f < kFiles; ++f) {
      const int64_t c = committed(f);
      after += std::max<int64_t>(0, c);
      const size_t line_end = bytes.rfind('\n', written[f] - 1);
      behind |= c < (line_end == std::string::npos ? 0 : static_cast<int64_t>(line_end + 1));
    }
    killed_behind += behind;
    killed_reading += behind && after > before;
  }
  // Kills must land in the middle of reading, or this tested only restarts (here 8 to 10 of the
  // 16 do, nearly all of those that wait for the first commit; a faster machine reads sooner).
  EXPECT_GE(killed_reading, kKills / 4) << killed_behind << " kills found the store behind the logs";

  // The last start runs until it has read the whole logs, and stops cleanly.
  DaemonProcess d({"--config", cfg}, base + "/daemon-last.log");
  ASSERT_TRUE(d.WaitForLog("initial scan", 10s)) << LogOf(d);  // started: SIGTERM is a clean stop
  ASSERT_TRUE(WaitFor([&] {
    return QueryInt(db, "SELECT count(*) FROM sources WHERE status = 'active' AND committed_offset = " +
                            std::to_string(bytes.size())) == kFiles;
  }, 30s)) << LogOf(d);
  std::optional<int> status = d.Stop(5s);
  ASSERT_TRUE(status.has_value()) << LogOf(d);
  EXPECT_EQ(Describe(*status), "exit 0") << LogOf(d);

  // One read of the final logs, the same glob naming them.
  {
    auto s = store::Store::Open(base + "/oneshot.db");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ingest::IngestOptions options;
    options.console_globs = {glob};
    ingest::Summary summary;
    ASSERT_TRUE(ingest::IngestPaths(**s, paths, options, &summary).ok());
    EXPECT_EQ(summary.totals.errors, 0);
  }
  const std::vector<std::string> want = Dump(base + "/oneshot.db"), got = Dump(db);
  const auto scalars = std::count_if(want.begin(), want.end(), [](const std::string& l) { return l.starts_with("scalar|"); });
  EXPECT_GT(scalars, 200 * kFiles);
  EXPECT_GT(QueryInt(base + "/oneshot.db", "SELECT count(*) FROM scalar_points WHERE tag = 'loss' AND value_class = 'nan'"),
            30 * kFiles)
      << "the log's NaN losses were not read";
  EXPECT_TRUE(got == want) << DiffSummary(got, want);
}

// (c) A profile that does not load: the daemon does not start (exit 78, EX_CONFIG), naming the
// file, and creates no store; on SIGHUP the reload is rejected and the daemon goes on reading
// with the profiles it has (a user's profile, which the built-ins would not read).
TEST(DaemonConsole, AProfileThatDoesNotLoadRefusesAStartAndAReload) {
  TempDir dir;
  const std::string base = fs::canonical(dir.path()).native();
  const std::string scratch = base + "/scratch", db = base + "/daemon.db", cfg = base + "/trainwatch.toml",
                    profiles = base + "/profiles";
  fs::create_directories(scratch);
  const std::string good = "name = \"mytrainer\"\n[[line]]\nmatch = '^STEP \\d+ '\nstep = '^STEP (\\d+)'\n"
                           "pairs = '\\b(\\w+)=({number})'\n";
  const std::string broken = "name = \"broken\"\n[[line]]\nmatch = '(unclosed'\n";
  WriteFile(profiles + "/a_mine.toml", good);
  WriteFile(profiles + "/b_broken.toml", broken);
  // Console globs alone are enough to run: no logdir.
  WriteFile(cfg, "[store]\npath = \"daemon.db\"\n[watch]\nrescan_interval_seconds = 0.2\n[ingest]\n"
                 "profiles_dir = \"profiles\"\n\n[[console]]\nglob = \"" + scratch + "/*.log\"\n");
  {
    DaemonProcess d({"--config", cfg}, base + "/refused.log");
    std::optional<int> status = d.Wait(10s);
    ASSERT_TRUE(status.has_value()) << "the daemon started with a broken profile" << LogOf(d);
    EXPECT_EQ(Describe(*status), "exit 78") << LogOf(d);
    EXPECT_NE(d.Log().find("<3>configuration error: " + cfg + ": [ingest] profiles_dir: " + profiles +
                           "/b_broken.toml:"),
              std::string::npos)
        << LogOf(d);
    EXPECT_FALSE(fs::exists(db)) << "a refused configuration created the store";
  }

  fs::remove(profiles + "/b_broken.toml");
  WriteFile(scratch + "/run1.log", "STEP 1 acc=0.50 loss=1.5\nSTEP 2 acc=0.75 loss=1.2\n");
  DaemonProcess d({"--config", cfg}, base + "/daemon.log");
  ASSERT_TRUE(WaitFor([&] { return Points(db, "run1", "acc") == 2; }, 10s))
      << "the user's profile did not read the log: " << Points(db, "run1", "acc") << LogOf(d);

  WriteFile(profiles + "/b_broken.toml", broken);
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLog("reload rejected", 10s)) << LogOf(d);
  EXPECT_NE(d.Log().find("reload rejected, keeping the running configuration: " + cfg + ": [ingest] profiles_dir: " +
                         profiles + "/b_broken.toml:"),
            std::string::npos)
      << LogOf(d);
  EXPECT_FALSE(d.Wait(0ms).has_value()) << "the daemon exited on a bad reload" << LogOf(d);
  AppendFile(scratch + "/run1.log", "STEP 3 acc=0.80 loss=1.0\n");
  ASSERT_TRUE(WaitFor([&] { return Points(db, "run1", "acc") == 3; }, 10s))
      << "not read after the rejected reload: " << Points(db, "run1", "acc") << LogOf(d);

  std::optional<int> status = d.Stop(5s);
  ASSERT_TRUE(status.has_value()) << LogOf(d);
  EXPECT_EQ(Describe(*status), "exit 0") << LogOf(d);
}

}  // namespace
}  // namespace tw

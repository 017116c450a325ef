// Hostile things in a logdir (issue 14, ingest side), each attack run against the real
// `trainwatch` binary where it is the daemon that is attacked: a FIFO named like an event file,
// symlinks out of a root, a text file that keeps growing, a file rewritten in place under its
// old head, a directory the daemon may not read, and a store that cannot be written. Every
// wait polls with a deadline; a pause is only ever pacing ("give it every chance to go wrong"),
// never an assertion.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ingest/file_ingester.h"
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

constexpr double kWall0 = 1700000000.0;

// Framed records: the file_version record (when `with_header`), then one scalar per step in
// [from, to) of "loss" with `value`.
std::string Records(int64_t from, int64_t to, float value, bool with_header = true,
                    double wall0 = kWall0) {
  std::string out;
  if (with_header) tfrecord::AppendRecord(&out, FileVersionEvent(wall0));
  for (int64_t s = from; s < to; ++s)
    tfrecord::AppendRecord(&out, SimpleScalarEvent("loss", s, wall0 + static_cast<double>(s), value));
  return out;
}

std::string EventPath(const std::string& dir, int counter) {
  return dir + "/" + EventFileName(1700000000 + counter, "host", 4242, counter);
}

void WriteEventFile(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  WriteFile(path, bytes);
}

// `s` as an SQL string literal.
std::string SqlQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

int64_t Occurrences(const std::string& text, const std::string& needle) {
  int64_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::string LogOf(const DaemonProcess& d) { return "\n--- daemon stderr ---\n" + d.Log(); }

// SIGTERM, then a clean exit within 5 s.
void ExpectStopsPromptly(DaemonProcess& d) {
  EXPECT_EQ(d.Stop(5s), std::optional<int>(0)) << "no clean exit within 5 s of SIGTERM" << LogOf(d);
}

// ---------------------------------------------------------------------------------------------
// 1. A FIFO named like an event file used to block the writer thread in open(2) forever.

void FifoScenario(const std::vector<std::string>& flags) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "d.db", staging = dir / "staging";
  WriteEventFile(EventPath(root + "/run-a", 0), Records(0, 50, 1.0f));
  std::vector<std::string> args = {"--logdir", root, "--db", db};
  args.insert(args.end(), flags.begin(), flags.end());
  DaemonProcess d(args, dir / "daemon.log");
  const std::string points = "SELECT count(*) FROM scalars";
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, points) == 50; }, 10s)) << LogOf(d);

  // A FIFO made while the daemon runs, and a directory holding one moved in.
  const std::string fifo = EventPath(root + "/run-a", 1);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_directories(staging + "/moved");
  const std::string moved_fifo = EventPath(staging + "/moved", 2);
  ASSERT_EQ(::mkfifo(moved_fifo.c_str(), 0644), 0);
  fs::rename(staging + "/moved", root + "/moved");

  const std::string refused =
      "SELECT count(*) FROM ingest_errors WHERE kind = 'not_regular_file'";
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, refused) == 2; }, 10s))
      << "the FIFOs were never refused (the writer thread is stuck?)" << LogOf(d);

  // A normal file written afterwards is still read: the writer thread is not stuck.
  WriteEventFile(EventPath(root + "/run-b", 0), Records(0, 30, 2.0f));
  EXPECT_TRUE(WaitFor([&] { return QueryInt(db, points) == 80; }, 10s)) << LogOf(d);
  std::this_thread::sleep_for(600ms);  // several rescans: pacing, not an assertion
  EXPECT_EQ(QueryInt(db, refused), 2) << "reported again" << LogOf(d);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM sources WHERE status = 'rejected'"), 2);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM ingest_errors WHERE path = " + SqlQuote(fifo) +
                             " AND detail LIKE '%a FIFO, not a regular file%'"),
            1);
  EXPECT_EQ(Occurrences(d.Log(), fifo), 1) << LogOf(d);
  ExpectStopsPromptly(d);
}

TEST(HostileFiles, FifoNamedLikeAnEventFileIsRefusedOnceAndTheDaemonGoesOn) {
  FifoScenario({"--rescan-interval", "0.2"});
}

TEST(HostileFiles, FifoNamedLikeAnEventFileIsRefusedOnceWithRescanOnly) {
  FifoScenario({"--no-inotify", "--rescan-interval", "0.2"});
}

// The ingester itself refuses a FIFO, whatever listed it (a path checked as a regular file
// and swapped for a FIFO before it is read). The FIFO is held open for writing here, so that
// without the check open(2) returns and the FIFO would be read as an empty event file.
TEST(HostileFiles, IngesterRefusesAFifoWithoutReadingIt) {
  TempDir dir;
  const std::string fifo = EventPath(dir / "logs/run", 0);
  fs::create_directories(fs::path(fifo).parent_path());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const int writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(writer, 0);
  auto s = store::Store::Open(dir / "t.db");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ingest::RunState run(**s, *(*s)->EnsureRun(dir / "logs", "run"), dir / "logs");
  ingest::FileIngester ingester(**s, {});
  ingest::Totals totals;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ingester.IngestFile(run, fifo, &totals).ok());
  ::close(writer);
  EXPECT_EQ(totals.errors, 1);
  EXPECT_EQ(totals.files_rejected, 1);
  EXPECT_EQ(QueryInt(dir / "t.db", "SELECT count(*) FROM ingest_errors WHERE kind = "
                                   "'not_regular_file'"),
            1);
  EXPECT_EQ(QueryInt(dir / "t.db", "SELECT count(*) FROM sources WHERE status = 'active'"), 0);
}

// `trainwatch ingest` over a logdir holding a FIFO, and given the FIFO itself: it finishes,
// reads the rest and names the FIFO.
TEST(HostileFiles, OneShotIngestDoesNotHangOnAFifo) {
  TempDir dir;
  const std::string root = dir / "logs";
  WriteEventFile(EventPath(root + "/run", 0), Records(0, 10, 1.0f));
  const std::string fifo = EventPath(root + "/run", 1);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  ChildProcess p({TW_CLI_BINARY, "ingest", "--db", dir / "t.db", root, fifo},
                 {dir / "out.txt", dir / "out.txt", {}});
  const std::optional<int> status = p.Wait(20s);
  ASSERT_TRUE(status.has_value()) << "trainwatch ingest hangs";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << ReadFile(dir / "out.txt");
  EXPECT_NE(ReadFile(dir / "out.txt").find(fifo + ": named like an event file but not a regular file"),
            std::string::npos)
      << ReadFile(dir / "out.txt");
  EXPECT_EQ(QueryInt(dir / "t.db", "SELECT count(*) FROM scalars"), 10);
}

// ---------------------------------------------------------------------------------------------
// 2. Symlinks out of a root; file bytes in the store; the store's mode.

TEST(HostileFiles, SymlinksOutOfTheRootAreRefusedOnceAndInsideOnesStillWork) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "d.db", priv = dir / "private";
  fs::create_directories(priv);
  WriteFile(priv + "/shadow", "TOPSECRET root:$6$hash:19000:0:99999:7:::\n");
  ::chmod((priv + "/shadow").c_str(), 0600);
  WriteEventFile(priv + "/events.out.tfevents.9.other", Records(0, 40, 9.0f));
  // Event files in run-a that lead out of the root: to a private text file, to real data.
  WriteEventFile(EventPath(root + "/run-b", 0), Records(0, 50, 1.0f));
  fs::create_directories(root + "/run-a");
  fs::create_symlink(priv + "/shadow", EventPath(root + "/run-a", 1));
  fs::create_symlink(priv + "/events.out.tfevents.9.other", EventPath(root + "/run-a", 2));
  // W&B's sync_tensorboard: a link to an event file inside the root, read once, there.
  fs::create_directories(root + "/run-b/files");
  fs::create_symlink(EventPath(root + "/run-b", 0), EventPath(root + "/run-b/files", 0));
  // A text file inside the root: reported, its bytes not quoted.
  WriteEventFile(EventPath(root + "/run-c", 0), "TOPSECRET in a text file of the logdir\n");

  const std::string outside = "SELECT count(*) FROM ingest_errors WHERE kind = 'outside_root'";
  const std::string points = "SELECT count(*) FROM scalars";
  {
    DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "0.2"}, dir / "daemon.log");
    ASSERT_TRUE(WaitFor([&] { return QueryInt(db, outside) == 2 && QueryInt(db, points) == 50; }, 10s))
        << "outside_root reports: " << QueryInt(db, outside) << ", points: " << QueryInt(db, points)
        << LogOf(d);
    std::this_thread::sleep_for(600ms);  // several rescans: pacing, not an assertion
    EXPECT_EQ(QueryInt(db, outside), 2) << LogOf(d);
    EXPECT_EQ(QueryInt(db, points), 50) << "data from outside the root was read" << LogOf(d);
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM sources WHERE status = 'active'"), 1);
    // Not a byte of any file lands in an error or in a source's head.
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM ingest_errors WHERE instr(detail, 'TOPSECRET') "
                           "OR instr(detail, 'root:$6')"),
              0);
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM sources WHERE instr(head, 'root:$6')"), 0);
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM ingest_errors WHERE kind = 'not_tfrecord'"), 1);
    ExpectStopsPromptly(d);
  }
  // The option lets them be read (the store from before: refused unread, now read).
  const std::string config = dir / "trainwatch.toml";
  WriteFile(config, "[store]\npath = " + SqlQuote(db) + "\n[watch]\nroots = [" + SqlQuote(root) +
                        "]\nrescan_interval_seconds = 0.2\nfollow_symlinks_outside_roots = true\n");
  DaemonProcess d({"--config", config}, dir / "daemon2.log");
  EXPECT_TRUE(WaitFor([&] { return QueryInt(db, points) == 90; }, 10s))
      << QueryInt(db, points) << LogOf(d);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM ingest_errors WHERE instr(detail, 'TOPSECRET') "
                         "OR instr(detail, 'root:$6')"),
            0);
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 07777;
  return st.st_mode & 0777;
}

TEST(HostileFiles, StoreIsCreatedPrivateAndAnExistingOneKeepsItsMode) {
  TempDir dir;
  const mode_t old_umask = ::umask(022);
  const std::string root = dir / "logs";
  WriteEventFile(EventPath(root + "/run", 0), Records(0, 10, 1.0f));
  // One-shot ingest.
  ASSERT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " ingest --quiet --db " + dir / "a.db" + " " + root), 0);
  EXPECT_EQ(ModeOf(dir / "a.db"), 0600u);
  // The daemon, with its -wal and -shm while it runs.
  {
    DaemonProcess d({"--logdir", root, "--db", dir / "b.db"}, dir / "daemon.log");
    EXPECT_TRUE(WaitFor([&] { return QueryInt(dir / "b.db", "SELECT count(*) FROM scalars") == 10; }, 10s))
        << LogOf(d);
    EXPECT_EQ(ModeOf(dir / "b.db"), 0600u);
    EXPECT_EQ(ModeOf(dir / "b.db-wal"), 0600u);
    EXPECT_EQ(ModeOf(dir / "b.db-shm"), 0600u);
    ExpectStopsPromptly(d);
  }
  // [store] group_readable: 0640.
  WriteFile(dir / "c.toml", "[store]\npath = " + SqlQuote(dir / "c.db") + "\ngroup_readable = true\n"
                            "[watch]\nroots = [" + SqlQuote(root) + "]\n");
  {
    DaemonProcess d({"--config", dir / "c.toml"}, dir / "daemon-c.log");
    EXPECT_TRUE(WaitFor([&] { return QueryInt(dir / "c.db", "SELECT count(*) FROM scalars") == 10; }, 10s))
        << LogOf(d);
    EXPECT_EQ(ModeOf(dir / "c.db"), 0640u);
    EXPECT_EQ(ModeOf(dir / "c.db-wal"), 0640u);
    ExpectStopsPromptly(d);
  }
  // A store that exists keeps the mode its owner gave it.
  ASSERT_EQ(::chmod((dir / "a.db").c_str(), 0644), 0);
  ASSERT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " ingest --quiet --db " + dir / "a.db" + " " + root), 0);
  EXPECT_EQ(ModeOf(dir / "a.db"), 0644u);
  ::umask(old_umask);
}

// ---------------------------------------------------------------------------------------------
// 3. A text file named like an event file that keeps growing: one report per generation.

TEST(HostileFiles, GrowingTextFileIsRejectedOncePerGeneration) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "d.db";
  const std::string text = EventPath(root + "/run", 0), events = EventPath(root + "/run", 1);
  WriteEventFile(text, "starting training, step 0\n");
  WriteEventFile(events, Records(0, 1, 1.0f));
  DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "0.2"}, dir / "daemon.log");
  const std::string points = "SELECT count(*) FROM scalars";
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, points) == 1; }, 10s)) << LogOf(d);
  for (int64_t step = 1; step <= 5; ++step) {
    AppendFile(text, "step " + std::to_string(step) + "\n");
    // The event file of the same run, appended after: once its point is in, the daemon has
    // seen the text file's append too (or a rescan has).
    AppendFile(events, Records(step, step + 1, 1.0f, false));
    ASSERT_TRUE(WaitFor([&] { return QueryInt(db, points) == step + 1; }, 10s)) << LogOf(d);
  }
  std::this_thread::sleep_for(600ms);  // several rescans: pacing, not an assertion
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM sources WHERE path = " + SqlQuote(text)), 1);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM ingest_errors WHERE path = " + SqlQuote(text)), 1);
  EXPECT_EQ(Occurrences(d.Log(), text), 1) << LogOf(d);

  // Replaced by a new file (another inode): a new generation, reported once more.
  WriteFile(dir / "new.txt", "another text\n");
  fs::rename(dir / "new.txt", text);
  EXPECT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM ingest_errors WHERE path = " + SqlQuote(text)) == 2; }, 10s))
      << LogOf(d);
}

// ---------------------------------------------------------------------------------------------
// 4. A file rewritten in place that keeps its first bytes.

TEST(HostileFiles, FileRewrittenInPlaceUnderItsOldHeadIsANewGeneration) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "d.db";
  const std::string path = EventPath(root + "/run", 0);
  // The same header and first steps; then other values, and more of them.
  const std::string before = Records(0, 60, 1.0f);
  const std::string after = Records(0, 3, 1.0f) + Records(3, 120, 7.0f, false);
  ASSERT_EQ(before.substr(0, 64), after.substr(0, 64));
  WriteEventFile(path, before);
  DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "0.2"}, dir / "daemon.log");
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM scalars") == 60; }, 10s))
      << LogOf(d);

  // Rewritten in place: no truncation, no new inode.
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, after.data(), after.size(), 0), static_cast<ssize_t>(after.size()));
  ::close(fd);

  const std::string oneshot = dir / "oneshot.db";
  {
    auto s = store::Store::Open(oneshot);
    ASSERT_TRUE(s.ok());
    ingest::Summary summary;
    ASSERT_TRUE(ingest::IngestPaths(**s, {root}, {}, &summary).ok());
  }
  const std::optional<std::vector<std::string>> want = DumpLiveScalars(oneshot);
  ASSERT_TRUE(want.has_value());
  ASSERT_EQ(want->size(), 120u);
  EXPECT_TRUE(WaitFor([&] { return DumpLiveScalars(db) == want; }, 10s))
      << "live points mix the two versions: "
      << QueryInt(db, "SELECT count(*) FROM scalar_points") << " live, "
      << QueryInt(db, "SELECT count(*) FROM ingest_errors") << " errors" << LogOf(d);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM run_events WHERE kind = 'file_replaced' AND "
                         "detail LIKE 'rewritten in place%'"),
            1);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM ingest_errors"), 0);
}

// ---------------------------------------------------------------------------------------------
// 5. A subdirectory the daemon may not read.

// `argv` run the way an unprivileged user's process runs: as root (whom no directory mode
// stops), through setpriv without the capabilities that bypass permission checks.
std::vector<std::string> Unprivileged(std::vector<std::string> argv) {
  if (::geteuid() != 0) return argv;
  argv.insert(argv.begin(), {"/usr/bin/setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"});
  return argv;
}

std::string Shell(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + SqlQuote(a);
  return out;
}

TEST(HostileFiles, UnreadableSubdirectoryIsReportedOnceInTheLogAndStatus) {
  if (::geteuid() == 0 && ::access("/usr/bin/setpriv", X_OK) != 0)
    GTEST_SKIP() << "running as root without setpriv: every directory is readable";
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "d.db", locked = root + "/locked";
  WriteEventFile(EventPath(root + "/run", 0), Records(0, 10, 1.0f));
  WriteEventFile(EventPath(locked + "/run", 0), Records(0, 20, 2.0f));
  ASSERT_EQ(::chmod(locked.c_str(), 0), 0);
  struct Restore {
    std::string p;
    ~Restore() { ::chmod(p.c_str(), 0755); }  // or TempDir cannot remove it
  } restore{locked};

  // The one-shot ingest says so in its summary.
  std::string out;
  RunCommand(Shell(Unprivileged({TW_CLI_BINARY, "ingest", "--db", dir / "once.db", root})), &out);
  EXPECT_NE(out.find(locked + ": permission denied"), std::string::npos) << out;

  const std::string log = dir / "daemon.log";
  WriteFile(log, "");  // the daemon appends to it
  ChildProcess d(Unprivileged({TW_CLI_BINARY, "daemon", "--logdir", root, "--db", db,
                               "--rescan-interval", "0.2"}),
                 {log, "", {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}});
  auto log_has = [&](const std::string& text) {
    return WaitFor([&] { return ReadFile(log).find(text) != std::string::npos; }, 10s);
  };
  const std::string warning = locked + ": permission denied";
  ASSERT_TRUE(log_has(warning)) << ReadFile(log);
  const std::string status_cmd = std::string(TW_CLI_BINARY) + " status --db " + SqlQuote(db);
  EXPECT_TRUE(WaitFor([&] {
    return RunCommand(status_cmd, &out) == 0 &&
           out.find("unreadable:  " + locked + " (permission denied") != std::string::npos;
  }, 10s)) << out;
  ASSERT_EQ(RunCommand(status_cmd + " --json", &out), 0);
  EXPECT_NE(out.find("\"unreadable\":[\"" + locked + "\"]"), std::string::npos) << out;
  std::this_thread::sleep_for(600ms);  // several rescans: pacing, not an assertion
  EXPECT_EQ(Occurrences(ReadFile(log), warning), 1) << ReadFile(log);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM scalars"), 10);

  // Readable again: said once, and its runs are read.
  ASSERT_EQ(::chmod(locked.c_str(), 0755), 0);
  EXPECT_TRUE(log_has(locked + ": readable again")) << ReadFile(log);
  EXPECT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM scalars") == 30; }, 10s))
      << ReadFile(log);
  EXPECT_TRUE(WaitFor([&] {
    return RunCommand(status_cmd + " --json", &out) == 0 &&
           out.find("\"unreadable\":[]") != std::string::npos;
  }, 10s)) << out;
  d.Signal(SIGTERM);
  EXPECT_TRUE(d.Wait(5s).has_value()) << ReadFile(log);
}

// ---------------------------------------------------------------------------------------------
// 6. A store that cannot be written: one log line when it starts, one when it clears.

TEST(HostileFiles, StoreWriteFailuresAreLoggedOncePerConditionAndRetried) {
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "d.db";
  std::vector<std::string> files;
  for (int r = 0; r < 3; ++r) {
    files.push_back(EventPath(root + "/run-" + std::to_string(r), 0));
    WriteEventFile(files.back(), Records(0, 2000, 1.0f));
  }
  DaemonProcess d({"--logdir", root, "--db", db, "--rescan-interval", "0.2"}, dir / "daemon.log");
  const std::string points = "SELECT count(*) FROM scalars";
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, points) == 6000; }, 20s)) << LogOf(d);
  // (Most of it in the WAL, which grows until a checkpoint and is then written from its start.)
  ASSERT_GT(fs::file_size(db) + fs::file_size(db + "-wal"), 256u << 10);

  // The daemon may write no byte past 64 KiB of any file: every store write fails (the store
  // and its WAL are larger), and the small log still goes through. SIGXFSZ must not kill it.
  rlimit old{};
  ASSERT_EQ(::prlimit(d.pid(), RLIMIT_FSIZE, nullptr, &old), 0);
  const rlimit tight{64 << 10, old.rlim_max};
  if (::prlimit(d.pid(), RLIMIT_FSIZE, &tight, nullptr) != 0)
    GTEST_SKIP() << "cannot set the daemon's RLIMIT_FSIZE here";
  int64_t step = 2000;
  auto append_all = [&] {
    for (const auto& f : files) AppendFile(f, Records(step, step + 5, 1.0f, false));
    step += 5;
  };
  append_all();
  ASSERT_TRUE(d.WaitForLog("store: ", 10s)) << LogOf(d);
  // Several rounds of new data and rescans, each failing for every file.
  for (int i = 0; i < 5; ++i) {
    append_all();
    std::this_thread::sleep_for(250ms);  // pacing: a rescan or more per round
  }
  const std::string log = d.Log();
  EXPECT_EQ(Occurrences(log, "<3>store: "), 1) << LogOf(d);

  // The condition clears: the files are retried and every point arrives, exactly once.
  ASSERT_EQ(::prlimit(d.pid(), RLIMIT_FSIZE, &old, nullptr), 0);
  EXPECT_TRUE(WaitFor([&] { return QueryInt(db, points) == 3 * step; }, 20s))
      << QueryInt(db, points) << " of " << 3 * step << LogOf(d);
  EXPECT_TRUE(d.WaitForLog("store: writes work again", 10s)) << LogOf(d);
  EXPECT_EQ(Occurrences(d.Log(), "store: writes work again"), 1) << LogOf(d);
  EXPECT_EQ(Occurrences(d.Log(), "<3>store: "), 1) << LogOf(d);
  ExpectStopsPromptly(d);
}

}  // namespace
}  // namespace tw

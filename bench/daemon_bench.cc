// Daemon benchmark: what `trainwatch daemon` costs and how fast it is, measured from the
// outside, on real processes (the trainwatch binary this tree built). A plain program.
//
//   daemon_bench [--latency] [--idle] [--rss] [--backfill] [--live-alarm]  (none: all five)
//                [--hostile [--kills N] [--junk-gib N]]   (only when named)
//                [--appends N] [--spacing-ms MS] [--poll-us US] [--rescan-interval SECS]
//                [--quiet-runs N] [--inotify-rescan SECS]
//                [--idle-runs N] [--idle-window SECS] [--rss-large N]
//                [--mib N] [--reps K] [--history-runs N] [--history-mib N]
//                [--keep DIR] [--trainwatch PATH]
//
// 1. latency: one run directory with one event file; the daemon started on it; then N
//    appends (default 200) of one SimpleScalarEvent with a unique step, each flushed the way a
//    writer does (EventFileWriter::Flush: open, append, close), ~20 ms apart with jitter
//    (uniform 15-25 ms). t0 is taken right before the flush (not after: on a busy 2-CPU
//    machine the daemon's threads, woken by the write's inotify event, can preempt the writer
//    between its write() and its next instruction and have the row committed before the writer
//    runs again; a t0 taken after the flush then reads ~0); a read-only connection then polls
//    `SELECT 1 FROM scalars WHERE series_id = ? AND step = ?` (the live series, created by one
//    untimed append before) every --poll-us (default 500 us), the first time right after the
//    flush, until the row is there (5 s timeout); latency = now - t0, so it includes the
//    flush itself (open, write, close: tens of us; its own figures are printed, with how many
//    rows were already visible at the first poll). Twice: (a) inotify on, rescan 30 s (the daemon's
//    defaults); (b) --no-inotify --rescan-interval 0.5: latency is then bounded by the
//    interval, and each append waits an extra uniform [0, interval) before it so that appends
//    land at random phases of the rescan timer (appending 20 ms after the previous row showed
//    up would otherwise always land just after a rescan and measure the worst case only).
//    --quiet-runs N puts N quiet runs (as in 2.) beside the live one, and --inotify-rescan
//    SECS gives (a) that rescan interval: with both, some appends meet a rescan of N runs.
// 2. idle: 1,000 quiet runs (one small file each: the file_version event and 5 steps of 3
//    tags); the daemon started with the default rescan (30 s) and again with
//    --rescan-interval 5; once the backfill is complete (every source's committed_offset =
//    its file's size) and 2 s more have passed, the daemon's CPU time (utime + stime from
//    /proc/PID/stat, clock ticks) over a 30 s quiet window, as % of one core. While the
//    logdir is quiet a rescan is all the daemon does, so its CPU time (the sum over its
//    threads of /proc/PID/task/TID/schedstat, ns), sampled every 2 ms, shows each rescan as
//    one burst in which the I/O (main) thread, which rescans, used 1 ms or more: its wall span
//    and CPU time. The other bursts are the writer's wakeups (its heartbeat once a second and
//    its commit of the state a rescan sets): usually well under 1 ms, but on a loaded machine
//    one can reach 1 ms, so a burst is told apart by the thread that used the CPU, not by size.
// 3. rss: 10 and 10,000 runs (one small file each); the daemon on its defaults; once
//    backfilled plus 2 s, VmRSS and VmHWM from /proc/PID/status. Also the number of inotify
//    watches the daemon logged, and whether it logged hitting the per-user watch limit.
// 4. backfill: a generated PyTorch-style logdir of --mib MiB (default 100; bench/gen.h, the
//    ingest_e2e layout: 8 runs of 3 files) ingested by the one-shot `trainwatch ingest` into a
//    fresh DB (the process timed from spawn to exit), and by the daemon into another fresh DB
//    (timed from spawn until every source's committed_offset = its file's size, polled every
//    20 ms). --reps K (default 3) times, interleaved; best of each; ratio = one-shot / daemon.
//    CPU time: the one-shot's to its exit (rusage), the daemon's at "all committed" (/proc)
//    and, for the same terms as the one-shot, to its exit after SIGTERM (rusage).
// 5. live-alarm: a history logdir of --history-runs runs (default 240) and --history-mib MiB
//    (default 1024; PyTorch-style, 20 tags, one file per run) whose files were last written two
//    days ago, and one live run (a healthy loss, written just now). The daemon is started on it
//    with --webhook to a loopback receiver; once it has logged its initial scan, the live run
//    logs a NaN loss (t0 right before the flush). Timed: from t0 to the receiver getting the
//    webhook for non_finite_loss on the live run; the backfill (every file committed) and the
//    diagnosis of all the history (the daemon's "diagnosis: caught up" line) from the daemon's
//    start. Baseline, in the same run: the same live run and NaN with no history. --reps K
//    times each, interleaved; the median of each, and their ratio.
// 6. hostile (only when named): a history of --mib MiB in 40 runs (as in 5.), a live run, a FIFO
//    and a --junk-gib GiB sparse file named like event files, and a user rule that loops
//    forever; the daemon (its defaults, a webhook to a loopback receiver) is killed with
//    SIGKILL --kills times (default 30) at random moments 0.3-3 s after each start, then started
//    once more and left to catch up; then the live run logs a NaN (t0 before the flush) and the
//    webhook for it is timed; SIGTERM; and the store is compared (DumpStore: every point and run
//    event) with a one-shot `trainwatch ingest` of the same files: lines doubled and lost.
//
// Every daemon is started with its stderr in a log file in the work dir, killed (SIGTERM,
// then SIGKILL after 5 s) and reaped when its part ends or fails, and dies with this program
// (PR_SET_PDEATHSIG). The work dir is a fresh directory under $TMPDIR (default /tmp), removed
// at the end; with --keep DIR the work happens in DIR, which is kept with the generated
// logdirs and the daemons' logs (the DBs are removed).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gen.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "support/http_server.h"
#include "support/store_dump.h"

#ifndef TW_CLI_BINARY
#error "TW_CLI_BINARY must name the trainwatch binary (bench/CMakeLists.txt defines it)"
#endif

namespace {

namespace fs = std::filesystem;
using namespace tw;
using Clock = std::chrono::steady_clock;

constexpr double kMiB = 1024.0 * 1024.0;

// Failures throw; main() reports them, and the destructors kill the daemons and the work dir.
[[noreturn]] void Die(const std::string& what) { throw std::runtime_error(what); }
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// SIGINT/SIGTERM: stop at the next sleep or poll, through the normal cleanup.
volatile std::sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }
void CheckInterrupted() {
  if (g_interrupted) Die("interrupted");
}
void SleepSeconds(double s) {
  CheckInterrupted();
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
  CheckInterrupted();
}

struct Options {
  bool latency = false, idle = false, rss = false, backfill = false, live_alarm = false, hostile = false;
  int kills = 30;
  double junk_gib = 4;
  int history_runs = 240;
  double history_mib = 1024;
  int appends = 200;
  double spacing_ms = 20;
  int poll_us = 500;
  double rescan_interval = 0.5;  // latency (b)
  double inotify_rescan = 0;     // latency (a): 0 = the daemon's default (30 s)
  int quiet_runs = 0;            // latency: quiet runs beside the live one
  int idle_runs = 1000;
  double idle_window = 30;
  int rss_large = 10000;
  double mib = 100;
  int reps = 3;
  std::string keep;
  std::string binary = TW_CLI_BINARY;
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  bool any = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    auto positive = [&](double v) {
      if (!(v > 0)) Die(a + " must be positive");
      return v;
    };
    if (a == "--latency") {
      o.latency = any = true;
    } else if (a == "--idle") {
      o.idle = any = true;
    } else if (a == "--rss") {
      o.rss = any = true;
    } else if (a == "--backfill") {
      o.backfill = any = true;
    } else if (a == "--live-alarm") {
      o.live_alarm = any = true;
    } else if (a == "--hostile") {
      o.hostile = any = true;
    } else if (a == "--kills") {
      o.kills = static_cast<int>(positive(std::atoi(value().c_str())));
    } else if (a == "--junk-gib") {
      o.junk_gib = positive(std::atof(value().c_str()));
    } else if (a == "--history-runs") {
      o.history_runs = static_cast<int>(positive(std::atoi(value().c_str())));
    } else if (a == "--history-mib") {
      o.history_mib = positive(std::atof(value().c_str()));
    } else if (a == "--appends") {
      o.appends = static_cast<int>(positive(std::atoi(value().c_str())));
    } else if (a == "--spacing-ms") {
      o.spacing_ms = positive(std::atof(value().c_str()));
    } else if (a == "--poll-us") {
      o.poll_us = static_cast<int>(positive(std::atoi(value().c_str())));
    } else if (a == "--rescan-interval") {
      o.rescan_interval = positive(std::atof(value().c_str()));
    } else if (a == "--inotify-rescan") {
      o.inotify_rescan = positive(std::atof(value().c_str()));
    } else if (a == "--quiet-runs") {
      o.quiet_runs = std::max(0, std::atoi(value().c_str()));
    } else if (a == "--idle-runs") {
      o.idle_runs = static_cast<int>(positive(std::atoi(value().c_str())));
    } else if (a == "--idle-window") {
      o.idle_window = positive(std::atof(value().c_str()));
    } else if (a == "--rss-large") {
      o.rss_large = static_cast<int>(positive(std::atoi(value().c_str())));
    } else if (a == "--mib") {
      o.mib = positive(std::atof(value().c_str()));
    } else if (a == "--reps") {
      o.reps = static_cast<int>(positive(std::atoi(value().c_str())));
    } else if (a == "--keep") {
      o.keep = value();
    } else if (a == "--trainwatch") {
      o.binary = value();
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: daemon_bench [--latency] [--idle] [--rss] [--backfill] [--live-alarm] "
          "[--hostile] (default: all but --hostile)\n"
          "                    [--kills N] [--junk-gib N]\n"
          "                    [--history-runs N] [--history-mib N]\n"
          "                    [--appends N] [--spacing-ms MS] [--poll-us US] "
          "[--rescan-interval SECS]\n"
          "                    [--quiet-runs N] [--inotify-rescan SECS]\n"
          "                    [--idle-runs N] [--idle-window SECS] [--rss-large N]\n"
          "                    [--mib N] [--reps K] [--keep DIR] [--trainwatch PATH]\n");
      std::exit(0);
    } else {
      Die("unknown argument " + a + " (try --help)");
    }
  }
  if (!any) o.latency = o.idle = o.rss = o.backfill = o.live_alarm = true;
  return o;
}

// ---------------------------------------------------------------------------------------------
// Child processes.

// One child process, its stdout and stderr appended to a log file. The destructor SIGKILLs
// and reaps it if it has not been reaped yet; PR_SET_PDEATHSIG kills it if this program dies.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const fs::path& log) : log_(log) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out < 0) Die("open " + log.string() + ": " + std::strerror(errno));
    const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const pid_t parent = ::getpid();
    std::fflush(stdout);
    std::fflush(stderr);
    pid_ = ::fork();
    if (pid_ < 0) {
      ::close(out);
      ::close(in);
      Die(std::string("fork: ") + std::strerror(errno));
    }
    if (pid_ == 0) {  // this program is single-threaded: the child may do more than exec
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(out, 2);
      // A benchmark run under systemd must not have its daemons talk to the real manager.
      ::unsetenv("NOTIFY_SOCKET");
      ::unsetenv("WATCHDOG_USEC");
      ::unsetenv("WATCHDOG_PID");
      ::execv(args[0], args.data());
      std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
      ::_exit(127);
    }
    ::close(out);
    ::close(in);
  }
  ~Process() { Kill(); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool reaped() const { return reaped_; }
  const fs::path& log() const { return log_; }
  const rusage& usage() const { return usage_; }  // valid once reaped

  // Whether it has exited (reaps it then).
  bool Exited() {
    if (reaped_) return true;
    const pid_t r = ::wait4(pid_, &status_, WNOHANG, &usage_);
    if (r == pid_) reaped_ = true;
    return reaped_;
  }
  // Waits for it to exit; its wait status.
  int Wait() {
    while (!reaped_) {
      const pid_t r = ::wait4(pid_, &status_, 0, &usage_);
      if (r == pid_) {
        reaped_ = true;
      } else if (errno == EINTR) {
        CheckInterrupted();
      } else {
        Die(std::string("wait4: ") + std::strerror(errno));
      }
    }
    return status_;
  }
  // SIGTERM, then up to `timeout_s` for it to exit, then SIGKILL; its wait status.
  int Stop(double timeout_s, double* took_s = nullptr) {
    const auto t0 = Clock::now();
    if (!reaped_) ::kill(pid_, SIGTERM);
    while (!Exited() && Seconds(t0, Clock::now()) < timeout_s)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (took_s) *took_s = Seconds(t0, Clock::now());
    Kill();
    return status_;
  }
  void Kill() {
    if (pid_ <= 0 || reaped_) return;
    ::kill(pid_, SIGKILL);
    while (::wait4(pid_, &status_, 0, &usage_) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  std::string LogTail(size_t max = 2000) const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    return s.size() > max ? "..." + s.substr(s.size() - max) : s;
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  rusage usage_{};
};

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// ---------------------------------------------------------------------------------------------
// /proc readings.

long ClockTicks() { return ::sysconf(_SC_CLK_TCK); }

// utime + stime of the whole process (all its threads), in clock ticks.
int64_t CpuTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t rp = s.rfind(')');
  if (rp == std::string::npos) Die("cannot read /proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(s.substr(rp + 2));
  std::string f;
  int64_t utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {  // field 3 is the state; 14 utime, 15 stime
    if (i == 14) utime = std::atoll(f.c_str());
    if (i == 15) {
      stime = std::atoll(f.c_str());
      break;
    }
  }
  return utime + stime;
}

// One thread's time on a CPU, in ns (the first field of schedstat); -1 if it is gone.
int64_t SchedNs(pid_t pid, pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/schedstat");
  int64_t ns = -1;
  if (!(in >> ns)) return -1;
  return ns;
}

std::vector<pid_t> Threads(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
    out.push_back(static_cast<pid_t>(std::atoi(e.path().filename().c_str())));
  std::sort(out.begin(), out.end());
  return out;
}

// "VmRSS:", "VmHWM:" from /proc/PID/status, in KiB.
long StatusKiB(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0) return std::atol(line.c_str() + n);
  return -1;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ---------------------------------------------------------------------------------------------
// Logdirs.

struct Tree {
  int64_t runs = 0, files = 0, bytes = 0, values = 0;
};

// `n` quiet runs exp_<i/100>/version_<i%100>, each with one small event file: the
// file_version event and 5 steps of 3 tags (15 scalar events, ~1 KiB).
Tree MakeQuietRuns(const fs::path& dir, int n) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  Tree t;
  for (int i = 0; i < n; ++i) {
    CheckInterrupted();
    const fs::path run_dir =
        dir / ("exp_" + std::to_string(i / 100)) / ("version_" + std::to_string(i % 100));
    const fs::path path =
        run_dir / testing::EventFileName(1700000000 + i, "bench-host", 1000 + i % 30000, 0);
    testing::EventFileWriter w(path.string());
    w.Add(testing::FileVersionEvent(bench::WallFor(0, 0) - 1, testing::kTorchSourceWriter));
    std::vector<bool> first_seen(20, false);
    for (int64_t step = 0; step < 5; ++step)
      bench::AddStep(step, 3, false, static_cast<uint64_t>(i) + 1, &first_seen,
                     [&](const std::string& ev) {
                       w.Add(ev);
                       t.values++;
                     });
    w.Flush();
    t.runs++;
    t.files++;
    t.bytes += static_cast<int64_t>(fs::file_size(path));
  }
  return t;
}

// The ingest_e2e logdir: 8 runs (exp_*/version_*) of 3 files each, a resumed run whose steps
// carry on across its files, 10-20 tags per run, PyTorch-style, at least `mib` MiB in all.
Tree MakeLargeLogdir(const fs::path& dir, double mib) {
  constexpr int kRuns = 8, kFilesPerRun = 3;
  fs::remove_all(dir);
  fs::create_directories(dir);
  Tree t;
  const auto per_file = static_cast<int64_t>(std::ceil(mib * kMiB / (kRuns * kFilesPerRun)));
  for (int r = 0; r < kRuns; ++r) {
    const int ntags = 10 + (r * 7) % 11;
    const fs::path run_dir =
        dir / ("exp_" + std::to_string(r / 4)) / ("version_" + std::to_string(r % 4));
    int64_t step = 0;
    for (int f = 0; f < kFilesPerRun; ++f) {
      CheckInterrupted();
      const fs::path path = run_dir / testing::EventFileName(1700000000 + r * 100000 + f * 3600,
                                                             "bench-host", 4242 + f, 0);
      testing::EventFileWriter w(path.string());
      int64_t file_bytes = 0;
      auto add = [&](const std::string& ev) {
        w.Add(ev);
        file_bytes += static_cast<int64_t>(ev.size() + 16);
        if (w.buffered() >= (256u << 10)) w.Flush();
      };
      add(testing::FileVersionEvent(bench::WallFor(step, 0) - 1, testing::kTorchSourceWriter));
      std::vector<bool> first_seen(20, false);
      while (file_bytes < per_file) {
        bench::AddStep(step, ntags, false, static_cast<uint64_t>(r) + 1, &first_seen,
                       [&](const std::string& ev) {
                         add(ev);
                         t.values++;
                       });
        ++step;
      }
      w.Flush();
      t.files++;
      t.bytes += static_cast<int64_t>(fs::file_size(path));
    }
    t.runs++;
  }
  return t;
}

void RemoveDb(const fs::path& db) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(db.string() + suffix);
}

// ---------------------------------------------------------------------------------------------
// The daemon and its store, seen from outside.

std::unique_ptr<Process> StartDaemon(const Options& o, const fs::path& logdir, const fs::path& db,
                                     const std::vector<std::string>& extra, const fs::path& log) {
  std::vector<std::string> argv = {o.binary, "daemon", "--logdir", logdir.string(), "--db",
                                   db.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  fs::remove(log);
  return std::make_unique<Process>(argv, log);
}

void CheckAlive(Process& p, const char* what) {
  if (p.Exited())
    Die(std::string(what) + " exited (" + DescribeStatus(p.Wait()) + "); its log:\n" +
        p.LogTail());
}

// A read-only connection to the daemon's store, as any reader (sqlite3, pandas) has one.
// Statements are reset after each use, so no read transaction stays open between polls.
class StoreReader {
 public:
  // Waits (up to `timeout_s`) until the daemon has created and migrated the store.
  StoreReader(const fs::path& db, Process& daemon, double timeout_s) {
    const auto t0 = Clock::now();
    for (;;) {
      CheckAlive(daemon, "the daemon");
      std::error_code ec;
      if (fs::exists(db, ec)) {
        Result<std::unique_ptr<store::Db>> r = store::OpenReadOnly(db.string());
        if (r.ok()) {
          db_ = std::move(r).value();
          Result<store::Stmt> c = db_->Prepare(
              "SELECT count(*), total(committed_offset) FROM sources WHERE status = 'active'");
          // series_id too, so the poll is one index lookup however many points the store holds.
          Result<store::Stmt> s =
              db_->Prepare("SELECT 1 FROM scalars WHERE series_id = ?1 AND step = ?2 LIMIT 1");
          if (c.ok() && s.ok()) {
            committed_ = std::move(c).value();
            step_ = std::move(s).value();
            return;
          }
          db_.reset();
        }
      }
      if (Seconds(t0, Clock::now()) > timeout_s) Die("the daemon did not create " + db.string());
      SleepSeconds(0.01);
    }
  }

  struct Committed {
    int64_t files = 0, bytes = 0;
  };
  Committed Poll() {
    Committed c;
    Result<bool> row = committed_.Step();
    if (!row.ok()) Die("poll: " + row.status().message());
    if (*row) {
      c.files = committed_.Int(0);
      c.bytes = static_cast<int64_t>(committed_.Real(1));
    }
    committed_.Reset();
    return c;
  }
  bool HasStep(int64_t series_id, int64_t step) {
    step_.Bind(1, series_id).Bind(2, step);
    Result<bool> row = step_.Step();
    if (!row.ok()) Die("poll: " + row.status().message());
    step_.Reset();
    return *row;
  }
  // The series of `tag` in the run named `run` (0 if there is none yet).
  int64_t SeriesId(const std::string& run, const std::string& tag) {
    Result<store::Stmt> s = db_->Prepare(
        "SELECT series_id FROM series JOIN runs USING (run_id) WHERE runs.name = ?1 AND tag = ?2");
    if (!s.ok()) Die("series: " + s.status().message());
    s->Bind(1, std::string_view(run)).Bind(2, std::string_view(tag));
    Result<bool> row = s->Step();
    return row.ok() && *row ? s->Int(0) : 0;
  }
  std::string State(const std::string& key) {
    Result<store::Stmt> s = db_->Prepare("SELECT value FROM daemon_state WHERE key = ?1");
    if (!s.ok()) return "";
    s->Bind(1, std::string_view(key));
    Result<bool> row = s->Step();
    return row.ok() && *row ? s->Text(0) : "";
  }

 private:
  std::unique_ptr<store::Db> db_;
  store::Stmt committed_, step_;  // declared after db_: finalized before it closes
};

// Polls every `interval_s` until every file of `t` is committed to its end; returns the time
// since `since` at which that was seen.
double WaitBackfilled(StoreReader& r, Process& daemon, const Tree& t, Clock::time_point since,
                      double interval_s, double timeout_s) {
  for (;;) {
    const StoreReader::Committed c = r.Poll();
    const auto now = Clock::now();
    // committed_offset <= size for every file, so equal sums mean every file is done.
    if (c.files >= t.files && c.bytes >= t.bytes) return Seconds(since, now);
    if (Seconds(since, now) > timeout_s)
      Die("backfill not complete after " + std::to_string(timeout_s) + " s: " +
          std::to_string(c.files) + " of " + std::to_string(t.files) + " files, " +
          std::to_string(c.bytes) + " of " + std::to_string(t.bytes) + " bytes");
    CheckAlive(daemon, "the daemon");
    SleepSeconds(interval_s);
  }
}

// Stops the daemon (SIGTERM) and insists on a clean exit within 5 s.
double StopDaemon(Process& d) {
  double took = 0;
  const int st = d.Stop(5.0, &took);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    Die("the daemon did not stop cleanly on SIGTERM (" + DescribeStatus(st) + "); its log:\n" +
        d.LogTail());
  return took;
}

// ---------------------------------------------------------------------------------------------
// 1. Latency.

struct LatencyResult {
  std::string mode;
  std::vector<double> ms;        // sorted
  std::vector<double> flush_us;  // the writer's flush (open, append, close) alone; sorted
  int at_first_poll = 0;         // rows already visible at the first poll after the flush
  int timeouts = 0;
  double stop_s = 0;
};

double Percentile(const std::vector<double>& sorted, double p) {  // nearest rank
  if (sorted.empty()) return NAN;
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

LatencyResult RunLatency(const Options& o, const fs::path& work, const std::string& mode,
                         const std::vector<std::string>& extra, double random_phase_s) {
  LatencyResult res;
  res.mode = mode;
  const fs::path logdir = work / "latency";
  const fs::path db = work / "latency.db";
  fs::remove_all(logdir);
  RemoveDb(db);
  Tree t;
  if (o.quiet_runs > 0) t = MakeQuietRuns(logdir / "quiet", o.quiet_runs);
  const fs::path path =
      logdir / "live" / "version_0" / testing::EventFileName(1700000000, "bench-host", 4242, 0);
  testing::EventFileWriter w(path.string());
  w.Add(testing::FileVersionEvent(bench::WallFor(0, 0) - 1, testing::kTorchSourceWriter));
  w.Flush();

  auto daemon = StartDaemon(o, logdir, db, extra, work / ("daemon-latency-" + mode + ".log"));
  StoreReader reader(db, *daemon, 10);
  t.files += 1;
  t.bytes += static_cast<int64_t>(fs::file_size(path));
  WaitBackfilled(reader, *daemon, t, Clock::now(), 0.005, 600);

  // One untimed append first: it creates the live series, whose id the polls then use.
  const std::string kTag = "train/loss";
  w.Add(testing::SimpleScalarEvent(kTag, 0, bench::WallFor(0, 0), bench::ValueFor(0, 0, 1)));
  w.Flush();
  int64_t series_id = 0;
  for (const auto t0 = Clock::now(); (series_id = reader.SeriesId("live/version_0", kTag)) == 0;) {
    if (Seconds(t0, Clock::now()) > 60) Die("the live run's first point never showed up");
    CheckAlive(*daemon, "the daemon");
    SleepSeconds(0.005);
  }

  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> jitter(0.75, 1.25), phase(0.0, 1.0);
  const auto poll = std::chrono::microseconds(o.poll_us);
  for (int i = 0; i < o.appends; ++i) {
    SleepSeconds(o.spacing_ms * 1e-3 * jitter(rng) + random_phase_s * phase(rng));
    const int64_t step = 1000000 + i;
    w.Add(testing::SimpleScalarEvent(kTag, step, bench::WallFor(step, 0),
                                     bench::ValueFor(0, step, 1)));
    // t0 before the flush: see the header (a t0 after it can miss the whole latency).
    const auto t0 = Clock::now();
    w.Flush();
    res.flush_us.push_back(Seconds(t0, Clock::now()) * 1e6);
    bool found = false;
    for (bool first = true;; first = false) {
      if (reader.HasStep(series_id, step)) {
        found = true;
        if (first) res.at_first_poll++;
        break;
      }
      if (Seconds(t0, Clock::now()) > 5.0) break;
      CheckInterrupted();
      std::this_thread::sleep_for(poll);
    }
    const auto t1 = Clock::now();
    if (found) {
      res.ms.push_back(Seconds(t0, t1) * 1e3);
    } else {
      res.timeouts++;
      CheckAlive(*daemon, "the daemon");
    }
  }
  res.stop_s = StopDaemon(*daemon);
  std::sort(res.ms.begin(), res.ms.end());
  std::sort(res.flush_us.begin(), res.flush_us.end());
  if (o.keep.empty()) fs::remove_all(logdir);
  RemoveDb(db);
  return res;
}

void PartLatency(const Options& o, const fs::path& work) {
  std::printf("\n== 1. latency: flushed append -> row visible to a read-only connection\n");
  std::printf("   %d appends of one scalar each, %.0f ms apart (uniform +-25%%), polled every %d us\n",
              o.appends, o.spacing_ms, o.poll_us);
  if (o.quiet_runs > 0)
    std::printf("   beside the live run: %d quiet runs (one ~1 KiB file each)\n", o.quiet_runs);
  char interval[32], a_interval[32];
  std::snprintf(interval, sizeof interval, "%g", o.rescan_interval);
  std::snprintf(a_interval, sizeof a_interval, "%g", o.inotify_rescan);
  const std::string a_label = o.inotify_rescan > 0
                                  ? std::string("(a) inotify on, --rescan-interval ") + a_interval
                                  : std::string("(a) inotify on, rescan 30 s (defaults)");
  std::vector<LatencyResult> results;
  results.push_back(RunLatency(
      o, work, "inotify",
      o.inotify_rescan > 0 ? std::vector<std::string>{"--rescan-interval", a_interval}
                           : std::vector<std::string>{},
      0));
  results.push_back(RunLatency(o, work, "rescan",
                               {"--no-inotify", "--rescan-interval", interval},
                               o.rescan_interval));
  std::printf("\n   %-44s %8s %8s %8s %8s %8s %8s %6s\n", "daemon", "min ms", "p50 ms",
              "p90 ms", "p99 ms", "max ms", "mean ms", "lost");
  for (const auto& r : results) {
    double mean = 0;
    for (double v : r.ms) mean += v;
    mean /= std::max<double>(1, static_cast<double>(r.ms.size()));
    const std::string label =
        r.mode == "inotify" ? a_label : std::string("(b) --no-inotify --rescan-interval ") + interval;
    std::printf("   %-44s %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %6d\n", label.c_str(),
                r.ms.empty() ? NAN : r.ms.front(), Percentile(r.ms, 50), Percentile(r.ms, 90),
                Percentile(r.ms, 99), r.ms.empty() ? NAN : r.ms.back(), mean, r.timeouts);
  }
  std::printf("   (b) is bounded by its rescan interval, %s s = %.0f ms; its appends land at "
              "random phases of it.\n",
              interval, o.rescan_interval * 1e3);
  const auto& a = results[0].ms;
  if (!a.empty()) {
    std::printf("   (a) slowest appends, ms:");
    for (size_t i = a.size() > 5 ? a.size() - 5 : 0; i < a.size(); ++i) std::printf(" %.2f", a[i]);
    std::printf("\n");
  }
  std::printf("   latency = poll that saw the row - t0 taken just before the writer's flush\n");
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    std::printf("   (%c) the flush itself (open, append, close): p50 %.0f us, p99 %.0f us, "
                "max %.0f us; row already visible at the first poll after it: %d of %zu\n",
                i == 0 ? 'a' : 'b', Percentile(r.flush_us, 50), Percentile(r.flush_us, 99),
                r.flush_us.empty() ? NAN : r.flush_us.back(), r.at_first_poll, r.flush_us.size());
  }
  std::printf("   SIGTERM -> exit: %.0f ms (a), %.0f ms (b)\n", results[0].stop_s * 1e3,
              results[1].stop_s * 1e3);
}

// ---------------------------------------------------------------------------------------------
// 2. Idle CPU.

struct Burst {
  double wall_ms = 0, cpu_ms = 0;
};

struct IdleResult {
  std::string label;
  double backfill_s = 0, window_s = 0;
  int64_t ticks = 0;
  double cpu_pct = 0;         // from the ticks
  double io_ms = 0, writer_ms = 0;  // schedstat deltas: the main thread, all the others
  size_t threads = 0;
  std::vector<Burst> rescans;  // bursts with >= 1 ms of the I/O thread's CPU time
  int wakeups = 0;              // the other bursts
  bool last_truncated = false;
  long rss_kib = 0;
};

IdleResult RunIdle(const Options& o, const fs::path& work, const fs::path& logdir, const Tree& t,
                   const std::string& label, const std::vector<std::string>& extra,
                   const std::string& log_name) {
  IdleResult res;
  res.label = label;
  const fs::path db = work / "idle.db";
  RemoveDb(db);
  ::sync();
  const auto start = Clock::now();
  auto daemon = StartDaemon(o, logdir, db, extra, work / log_name);
  {
    StoreReader reader(db, *daemon, 30);
    res.backfill_s = WaitBackfilled(reader, *daemon, t, start, 0.05, 600);
  }  // the reader is closed during the window
  SleepSeconds(2);
  CheckAlive(*daemon, "the daemon");

  const pid_t pid = daemon->pid();
  const std::vector<pid_t> tids = Threads(pid);
  std::vector<int64_t> ns0;
  for (pid_t tid : tids) ns0.push_back(SchedNs(pid, tid));
  const int64_t ticks0 = CpuTicks(pid);
  const auto w0 = Clock::now();
  const auto end = w0 + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(o.idle_window));

  // The daemon's CPU time (all its threads) sampled every 2 ms. While the logdir is quiet,
  // a rescan is the only burst in which the I/O thread uses 1 ms or more; the rest are the
  // writer's wakeups (its once-a-second heartbeat, its commit of the state a rescan sets).
  int64_t io_now = 0;  // the I/O (main) thread's part of the last total_ns()
  auto total_ns = [&] {
    int64_t sum = 0;
    for (pid_t tid : tids) {
      const int64_t ns = std::max<int64_t>(0, SchedNs(pid, tid));
      if (tid == pid) io_now = ns;
      sum += ns;
    }
    return sum;
  };
  int64_t last = total_ns(), last_io = io_now;
  auto last_t = w0, last_inc = w0, burst_start = w0;
  bool in_burst = false;
  int64_t burst_ns = 0, burst_io_ns = 0;
  auto end_burst = [&](bool truncated) {
    in_burst = false;
    if (burst_io_ns < 1000000) {
      res.wakeups++;
      return;
    }
    res.rescans.push_back(
        {Seconds(burst_start, last_inc) * 1e3, static_cast<double>(burst_ns) / 1e6});
    res.last_truncated = truncated;
  };
  for (auto now = Clock::now(); now < end; now = Clock::now()) {
    CheckInterrupted();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const int64_t v = total_ns();
    const auto ts = Clock::now();
    if (v > last) {
      if (!in_burst) {
        in_burst = true;
        burst_start = last_t;
        burst_ns = burst_io_ns = 0;
      }
      burst_ns += v - last;
      burst_io_ns += io_now - last_io;
      last_inc = ts;
    } else if (in_burst && Seconds(last_inc, ts) > 0.05) {
      end_burst(false);
    }
    last = v;
    last_io = io_now;
    last_t = ts;
  }
  if (in_burst) end_burst(true);
  const int64_t ticks1 = CpuTicks(pid);
  const auto w1 = Clock::now();
  for (size_t i = 0; i < tids.size(); ++i) {
    const int64_t v = SchedNs(pid, tids[i]);
    const double ms = v >= 0 && ns0[i] >= 0 ? static_cast<double>(v - ns0[i]) / 1e6 : 0;
    (tids[i] == pid ? res.io_ms : res.writer_ms) += ms;
  }
  res.threads = tids.size();
  res.window_s = Seconds(w0, w1);
  res.ticks = ticks1 - ticks0;
  res.cpu_pct = 100.0 * static_cast<double>(res.ticks) / static_cast<double>(ClockTicks()) /
                res.window_s;
  res.rss_kib = StatusKiB(pid, "VmRSS:");
  StopDaemon(*daemon);
  RemoveDb(db);
  return res;
}

void PartIdle(const Options& o, const fs::path& work) {
  std::printf("\n== 2. idle CPU with %d quiet runs (one ~1 KiB file each)\n", o.idle_runs);
  const fs::path logdir = work / "quiet";
  const auto g0 = Clock::now();
  const Tree t = MakeQuietRuns(logdir, o.idle_runs);
  std::printf("   %" PRId64 " runs, %" PRId64 " files, %.2f MiB (generated in %.1f s); window "
              "%.0f s after backfill + 2 s; %ld clock ticks/s\n",
              t.runs, t.files, static_cast<double>(t.bytes) / kMiB, Seconds(g0, Clock::now()),
              o.idle_window, ClockTicks());
  std::vector<IdleResult> results;
  results.push_back(RunIdle(o, work, logdir, t, "rescan 30 s (default), inotify on", {},
                            "daemon-idle-30.log"));
  results.push_back(RunIdle(o, work, logdir, t, "--rescan-interval 5, inotify on",
                            {"--rescan-interval", "5"}, "daemon-idle-5.log"));
  std::printf("\n   %-36s %9s %6s %8s %9s %10s %10s %8s %8s\n", "daemon", "backfill", "ticks",
              "CPU %", "CPU % ns", "I/O thr ms", "others ms", "rescans", "VmRSS");
  for (const auto& r : results)
    std::printf("   %-36s %7.2f s %6" PRId64 " %7.3f%% %8.3f%% %10.1f %10.1f %8zu %4.1f MiB\n",
                r.label.c_str(), r.backfill_s, r.ticks, r.cpu_pct,
                (r.io_ms + r.writer_ms) / 10.0 / r.window_s, r.io_ms, r.writer_ms,
                r.rescans.size(), static_cast<double>(r.rss_kib) / 1024.0);
  std::printf("   CPU %% = utime+stime ticks / window; CPU %% ns = the same from every thread's "
              "schedstat (ns)\n");
  std::printf("\n   one rescan of %" PRId64 " runs (bursts of the daemon's CPU time, sampled every "
              "2 ms, with >= 1 ms of it on the I/O thread):\n",
              t.runs);
  for (const auto& r : results) {
    std::printf("   %-36s", r.label.c_str());
    if (r.rescans.empty()) std::printf(" none in the window");
    for (size_t i = 0; i < r.rescans.size(); ++i)
      std::printf(" %s%.1f ms CPU / %.1f ms wall", i ? "; " : "", r.rescans[i].cpu_ms,
                  r.rescans[i].wall_ms);
    if (r.last_truncated) std::printf(" (last one cut by the window's end)");
    std::printf("  [+%d other wakeups]\n", r.wakeups);
  }
  std::printf("   I/O thr = the main thread (timers, inotify, the rescan); others = the writer "
              "thread (and any other: %zu threads in all)\n",
              results[0].threads);
  if (o.keep.empty()) fs::remove_all(logdir);
}

// ---------------------------------------------------------------------------------------------
// 3. RSS.

struct RssResult {
  Tree tree;
  double backfill_s = 0;
  long rss_kib = 0, hwm_kib = 0;
  std::string watches, inotify_state;
  bool limit_logged = false;
};

RssResult RunRss(const Options& o, const fs::path& work, int runs) {
  RssResult res;
  const fs::path logdir = work / ("rss-" + std::to_string(runs));
  const fs::path db = work / "rss.db";
  res.tree = MakeQuietRuns(logdir, runs);
  RemoveDb(db);
  ::sync();
  const auto start = Clock::now();
  auto daemon =
      StartDaemon(o, logdir, db, {}, work / ("daemon-rss-" + std::to_string(runs) + ".log"));
  {
    StoreReader reader(db, *daemon, 30);
    res.backfill_s = WaitBackfilled(reader, *daemon, res.tree, start, 0.05, 1200);
  }
  SleepSeconds(2);
  CheckAlive(*daemon, "the daemon");
  res.rss_kib = StatusKiB(daemon->pid(), "VmRSS:");
  res.hwm_kib = StatusKiB(daemon->pid(), "VmHWM:");
  {
    StoreReader reader(db, *daemon, 5);
    res.inotify_state = reader.State("inotify");
  }
  const std::string log = ReadFile(daemon->log());
  const std::string key = "inotify: watching ";
  if (size_t p = log.find(key); p != std::string::npos)
    res.watches = log.substr(p + key.size(), log.find(' ', p + key.size()) - p - key.size());
  res.limit_logged = log.find("watch limit") != std::string::npos;
  StopDaemon(*daemon);
  RemoveDb(db);
  if (o.keep.empty()) fs::remove_all(logdir);
  return res;
}

void PartRss(const Options& o, const fs::path& work) {
  std::printf("\n== 3. daemon RSS with 10 and %d quiet runs (defaults: inotify on, rescan 30 s)\n",
              o.rss_large);
  std::string limit = ReadFile("/proc/sys/fs/inotify/max_user_watches");
  while (!limit.empty() && (limit.back() == '\n' || limit.back() == ' ')) limit.pop_back();
  std::printf("   fs.inotify.max_user_watches = %s\n\n", limit.c_str());
  std::printf("   %8s %8s %10s %10s %10s %9s  %s\n", "runs", "files", "backfill", "VmRSS",
              "VmHWM", "watches", "inotify (daemon_state)");
  for (int n : {10, o.rss_large}) {
    const RssResult r = RunRss(o, work, n);
    std::printf("   %8" PRId64 " %8" PRId64 " %8.2f s %6.1f MiB %6.1f MiB %9s  %s%s\n", r.tree.runs,
                r.tree.files, r.backfill_s, static_cast<double>(r.rss_kib) / 1024.0,
                static_cast<double>(r.hwm_kib) / 1024.0, r.watches.c_str(),
                r.inotify_state.c_str(), r.limit_logged ? " (watch limit logged)" : "");
  }
  std::printf("   target: flat, <= 64 MiB\n");
}

// ---------------------------------------------------------------------------------------------
// 4. Backfill throughput.

struct Timed {
  double wall = 0, cpu = 0;
  double cpu_exit = 0;  // the daemon only: its CPU time at exit (rusage), after SIGTERM
};

Timed RunOneShot(const Options& o, const fs::path& work, const fs::path& logdir, const fs::path& db) {
  RemoveDb(db);
  ::sync();
  const auto t0 = Clock::now();
  Process p({o.binary, "ingest", "--quiet", "--db", db.string(), logdir.string()},
            work / "ingest.log");
  const int st = p.Wait();
  Timed t;
  t.wall = Seconds(t0, Clock::now());
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    Die("trainwatch ingest failed (" + DescribeStatus(st) + "):\n" + p.LogTail());
  auto sec = [](const timeval& v) { return static_cast<double>(v.tv_sec) + v.tv_usec * 1e-6; };
  t.cpu = sec(p.usage().ru_utime) + sec(p.usage().ru_stime);
  return t;
}

Timed RunDaemonBackfill(const Options& o, const fs::path& work, const fs::path& logdir,
                        const Tree& tree, const fs::path& db) {
  RemoveDb(db);
  ::sync();
  const auto t0 = Clock::now();
  auto daemon = StartDaemon(o, logdir, db, {}, work / "daemon-backfill.log");
  Timed t;
  {
    StoreReader reader(db, *daemon, 30);
    t.wall = WaitBackfilled(reader, *daemon, tree, t0, 0.02, 600);
  }
  t.cpu = static_cast<double>(CpuTicks(daemon->pid())) / static_cast<double>(ClockTicks());
  StopDaemon(*daemon);
  // The one-shot's CPU time runs to its exit (closing the store checkpoints the WAL); this is
  // the daemon's on the same terms.
  auto sec = [](const timeval& v) { return static_cast<double>(v.tv_sec) + v.tv_usec * 1e-6; };
  t.cpu_exit = sec(daemon->usage().ru_utime) + sec(daemon->usage().ru_stime);
  return t;
}

int64_t CountScalars(const fs::path& db) {
  Result<std::unique_ptr<store::Db>> d = store::OpenReadOnly(db.string());
  if (!d.ok()) Die("open " + db.string() + ": " + d.status().message());
  Result<store::Stmt> s = (*d)->Prepare("SELECT count(*) FROM scalars");
  if (!s.ok()) Die("count: " + s.status().message());
  Result<bool> row = s->Step();
  if (!row.ok() || !*row) Die("count failed");
  return s->Int(0);
}

void PartBackfill(const Options& o, const fs::path& work) {
  std::printf("\n== 4. backfill: daemon from start to all committed vs one-shot `trainwatch ingest`\n");
  const fs::path logdir = work / "large";
  const auto g0 = Clock::now();
  const Tree t = MakeLargeLogdir(logdir, o.mib);
  std::printf("   PyTorch-style logdir: %.1f MiB, %" PRId64 " runs, %" PRId64 " files, %" PRId64
              " points (generated in %.1f s); %d reps, interleaved\n\n",
              static_cast<double>(t.bytes) / kMiB, t.runs, t.files, t.values,
              Seconds(g0, Clock::now()), o.reps);
  const fs::path db_once = work / "oneshot.db", db_daemon = work / "daemon.db";
  Timed best_once, best_daemon;
  std::printf("   %4s %22s %22s %16s\n", "rep", "one-shot wall / CPU", "daemon wall / CPU",
              "daemon CPU@exit");
  for (int i = 0; i < o.reps; ++i) {
    const Timed once = RunOneShot(o, work, logdir, db_once);
    const Timed dmn = RunDaemonBackfill(o, work, logdir, t, db_daemon);
    std::printf("   %4d %9.3f s / %6.3f s %9.3f s / %6.3f s %14.3f s\n", i + 1, once.wall,
                once.cpu, dmn.wall, dmn.cpu, dmn.cpu_exit);
    if (i == 0) {
      const int64_t a = CountScalars(db_once), b = CountScalars(db_daemon);
      if (a != t.values || b != t.values)
        Die("scalar rows: one-shot " + std::to_string(a) + ", daemon " + std::to_string(b) +
            ", generated " + std::to_string(t.values));
      best_once = once;
      best_daemon = dmn;
    }
    best_once.wall = std::min(best_once.wall, once.wall);
    best_once.cpu = std::min(best_once.cpu, once.cpu);
    best_daemon.wall = std::min(best_daemon.wall, dmn.wall);
    best_daemon.cpu = std::min(best_daemon.cpu, dmn.cpu);
    best_daemon.cpu_exit = std::min(best_daemon.cpu_exit, dmn.cpu_exit);
  }
  std::printf("   best %9.3f s / %6.3f s %9.3f s / %6.3f s %14.3f s\n", best_once.wall,
              best_once.cpu, best_daemon.wall, best_daemon.cpu, best_daemon.cpu_exit);
  const double ratio = best_once.wall / best_daemon.wall;
  std::printf("\n   one-shot %.1f MiB/s, daemon %.1f MiB/s (wall, best of %d)\n",
              static_cast<double>(t.bytes) / kMiB / best_once.wall,
              static_cast<double>(t.bytes) / kMiB / best_daemon.wall, o.reps);
  std::printf("   ratio one-shot time / daemon time  %.2f wall (target >= 0.90: %s); %.2f on CPU "
              "time (%.2f with the daemon's CPU to its exit)\n",
              ratio, ratio >= 0.9 ? "met" : "NOT met", best_once.cpu / best_daemon.cpu,
              best_once.cpu / best_daemon.cpu_exit);
  std::printf("   (both %" PRId64 " scalar rows, checked)\n", t.values);
  RemoveDb(db_once);
  RemoveDb(db_daemon);
  if (o.keep.empty()) fs::remove_all(logdir);
}

// ---------------------------------------------------------------------------------------------
// 5. live-alarm

// `runs` history runs hist_<i/100>/run_<i%100>, one PyTorch-style file each, `mib` MiB in all,
// last written two days ago.
Tree MakeHistory(const fs::path& dir, int runs, double mib) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  Tree t;
  const auto per_file = static_cast<int64_t>(std::ceil(mib * kMiB / runs));
  const timespec old[2] = {{::time(nullptr) - 2 * 86400, 0}, {::time(nullptr) - 2 * 86400, 0}};
  for (int r = 0; r < runs; ++r) {
    CheckInterrupted();
    const fs::path path = dir / ("hist_" + std::to_string(r / 100)) / ("run_" + std::to_string(r % 100)) /
                          testing::EventFileName(1700000000 + r * 1000, "bench-host", 4242, 0);
    testing::EventFileWriter w(path.string());
    int64_t file_bytes = 0;
    auto add = [&](const std::string& ev) {
      w.Add(ev);
      file_bytes += static_cast<int64_t>(ev.size() + 16);
      if (w.buffered() >= (256u << 10)) w.Flush();
    };
    add(testing::FileVersionEvent(bench::WallFor(0, 0) - 1, testing::kTorchSourceWriter));
    std::vector<bool> first_seen(20, false);
    for (int64_t step = 0; file_bytes < per_file; ++step)
      bench::AddStep(step, 20, false, static_cast<uint64_t>(r) + 1, &first_seen, [&](const std::string& ev) {
        add(ev);
        t.values++;
      });
    w.Flush();
    if (::utimensat(AT_FDCWD, path.c_str(), old, 0) != 0) Die("utimensat " + path.string());
    t.files++;
    t.runs++;
    t.bytes += static_cast<int64_t>(fs::file_size(path));
  }
  return t;
}

struct AlarmResult {
  double alarm = 0;      // NaN flushed -> webhook received
  double backfill = 0;   // daemon start -> every file committed
  double diagnosed = 0;  // daemon start -> "diagnosis: caught up" (0: not seen)
};

// The live run of parts 5 and 6: live/version_0 under `logdir`, a healthy falling loss for 300
// steps (logged over the last 10 minutes), flushed; LogNan() then makes its loss NaN.
testing::EventFileWriter StartLiveRun(const fs::path& logdir) {
  testing::EventFileWriter live(
      (logdir / "live" / "version_0" / testing::EventFileName(1700000000, "bench-host", 7, 0)).string());
  const double wall0 = static_cast<double>(::time(nullptr)) - 600;
  live.Add(testing::FileVersionEvent(wall0, testing::kTorchSourceWriter));
  for (int s = 0; s < 300; ++s)
    live.Add(testing::SimpleScalarEvent("train/loss", s, wall0 + s, 2.0f * std::exp(-s / 100.0f) + 0.1f));
  live.Flush();
  return live;
}

// Appends 5 NaN losses to the live run, flushed as a writer does; the steady-clock time just
// before the flush (the receiver's clock).
double LogNan(testing::EventFileWriter& live) {
  for (int s = 300; s < 305; ++s)
    live.Add(testing::SimpleScalarEvent("train/loss", s, static_cast<double>(::time(nullptr)), std::nanf("")));
  const double t0 = testing::SteadySeconds();
  live.Flush();
  return t0;
}

// Whether `req` is the webhook for the live run's NaN.
bool IsLiveNanAlarm(const testing::RecordedRequest& req) {
  return req.body.find("non_finite_loss") != std::string::npos && req.body.find("live/version_0") != std::string::npos;
}

// One daemon on `logdir` (its history, if any, already there) plus a fresh live run; the NaN
// appended once the initial scan is logged.
AlarmResult RunLiveAlarm(const Options& o, const fs::path& work, const fs::path& logdir, const Tree& history,
                         const std::string& tag) {
  fs::remove_all(logdir / "live");
  testing::EventFileWriter live = StartLiveRun(logdir);
  Tree t = history;
  t.files++;
  t.bytes += static_cast<int64_t>(fs::file_size(live.path()));

  testing::HttpServer hook;
  const fs::path db = work / ("alarm-" + tag + ".db"), log = work / ("alarm-" + tag + ".log");
  RemoveDb(db);
  const auto start = Clock::now();
  auto daemon = StartDaemon(o, logdir, db, {"--webhook", hook.url()}, log);
  for (;;) {  // the initial scan has posted every file: the backfill is under way
    CheckAlive(*daemon, "the daemon");
    if (ReadFile(log).find("initial scan") != std::string::npos) break;
    if (Seconds(start, Clock::now()) > 60) Die("no initial scan after 60 s");
    SleepSeconds(0.01);
  }
  const auto t0 = Clock::now();
  const double t0_steady = LogNan(live);
  AlarmResult r;
  StoreReader reader(db, *daemon, 60);
  for (;;) {
    CheckAlive(*daemon, "the daemon");
    const auto now = Clock::now();
    if (r.alarm == 0) {
      for (const auto& req : hook.requests())
        if (IsLiveNanAlarm(req)) {
          r.alarm = req.time - t0_steady;
          break;
        }
    }
    if (r.backfill == 0) {
      const StoreReader::Committed c = reader.Poll();
      if (c.files >= t.files && c.bytes >= t.bytes) r.backfill = Seconds(start, now);
    }
    if (r.diagnosed == 0 && (history.runs == 0 || ReadFile(log).find("diagnosis: caught up") != std::string::npos))
      r.diagnosed = Seconds(start, now);
    if (r.alarm > 0 && r.backfill > 0 && r.diagnosed > 0) break;
    if (Seconds(t0, now) > 900)
      Die("after 900 s: alarm " + std::to_string(r.alarm) + " s, backfill " + std::to_string(r.backfill) +
          " s, diagnosed " + std::to_string(r.diagnosed) + " s; log:\n" + daemon->LogTail());
    SleepSeconds(0.02);
  }
  StopDaemon(*daemon);
  RemoveDb(db);
  return r;
}

void PartLiveAlarm(const Options& o, const fs::path& work) {
  std::printf("\n== 5. live-alarm: a live run's NaN to its webhook while the daemon backfills a history\n");
  const fs::path with = work / "history", without = work / "no-history";
  const auto g0 = Clock::now();
  const Tree h = MakeHistory(with / "old", o.history_runs, o.history_mib);
  fs::create_directories(without);
  std::printf("   history: %.1f MiB, %" PRId64 " runs, %" PRId64 " points, last written 2 days ago "
              "(generated in %.1f s); %d reps, interleaved\n\n",
              static_cast<double>(h.bytes) / kMiB, h.runs, h.values, Seconds(g0, Clock::now()), o.reps);
  std::printf("   %4s %18s %18s %16s %18s\n", "rep", "alarm, no history", "alarm, history",
              "backfill done", "history diagnosed");
  std::vector<double> alone, busy, backfill, diagnosed;
  for (int i = 0; i < o.reps; ++i) {
    const AlarmResult a = RunLiveAlarm(o, work, without, Tree{}, "alone");
    const AlarmResult b = RunLiveAlarm(o, work, with, h, "history");
    std::printf("   %4d %16.3f s %16.3f s %14.1f s %16.1f s\n", i + 1, a.alarm, b.alarm, b.backfill, b.diagnosed);
    alone.push_back(a.alarm);
    busy.push_back(b.alarm);
    backfill.push_back(b.backfill);
    diagnosed.push_back(b.diagnosed);
  }
  for (auto* v : {&alone, &busy, &backfill, &diagnosed}) std::sort(v->begin(), v->end());
  const double m_alone = Percentile(alone, 50), m_busy = Percentile(busy, 50);
  std::printf("\n   median alarm: %.3f s alone, %.3f s beside the backfill (goal < 5 s: %s); ratio %.2f\n",
              m_alone, m_busy, m_busy < 5 ? "met" : "NOT met", m_busy / m_alone);
  std::printf("   median backfill %.1f s, history diagnosed %.1f s after the daemon's start\n",
              Percentile(backfill, 50), Percentile(diagnosed, 50));
  if (o.keep.empty()) {
    fs::remove_all(with);
    fs::remove_all(without);
  }
}

// ---------------------------------------------------------------------------------------------
// 6. hostile: kill -9s during a backfill beside a FIFO, a huge garbage file and a looping rule

void PartHostile(const Options& o, const fs::path& work) {
  std::printf("\n== 6. hostile: %d kill -9s during ingest beside a FIFO, a %.0f GiB garbage file and a "
              "looping rule; then a NaN's alarm and the store against a one-shot ingest\n",
              o.kills, o.junk_gib);
  const fs::path logdir = work / "hostile", rules = work / "hostile-rules";
  const fs::path db = work / "hostile.db", log = work / "hostile.log", config = work / "hostile.toml";
  const auto g0 = Clock::now();
  const Tree h = MakeHistory(logdir / "old", 40, o.mib);
  fs::create_directories(logdir / "fifo");
  const fs::path fifo = logdir / "fifo" / "events.out.tfevents.1.fifo";
  if (::mkfifo(fifo.c_str(), 0644) != 0) Die("mkfifo " + fifo.string());
  fs::create_directories(logdir / "junk");
  const fs::path junk = logdir / "junk" / "events.out.tfevents.1.junk";
  std::ofstream(junk).close();
  if (::truncate(junk.c_str(), static_cast<off_t>(o.junk_gib * 1024 * kMiB)) != 0) Die("truncate " + junk.string());
  testing::EventFileWriter live = StartLiveRun(logdir);
  fs::create_directories(rules);
  std::ofstream(rules / "loop.sql") << "-- id: loops_forever\n-- title: A rule that never returns\n"
                                       "-- roles: train_loss\n"
                                       "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)\n"
                                       "SELECT 'never' AS message FROM c WHERE x < 0\n";
  testing::HttpServer hook;
  std::ofstream(config) << "[store]\npath = \"" << db.string() << "\"\n[watch]\nroots = [\"" << logdir.string()
                        << "\"]\n[rules]\ndir = \"" << rules.string() << "\"\n";
  std::printf("   history %.1f MiB in %" PRId64 " runs, a FIFO, %.0f GiB of garbage (sparse), a rule that loops "
              "(generated in %.1f s)\n",
              static_cast<double>(h.bytes) / kMiB, h.runs, o.junk_gib, Seconds(g0, Clock::now()));
  const std::vector<std::string> daemon_args = {o.binary, "daemon", "--config", config.string(), "--webhook",
                                                hook.url()};
  RemoveDb(db);
  fs::remove(log);
  // Points committed so far, of the files that can be read (the history and the live run).
  auto committed = [&] {
    return testing::QueryInt(db.string(), "SELECT total(committed_offset) FROM sources WHERE path NOT LIKE '%/junk/%' "
                                          "AND path NOT LIKE '%/fifo/%' AND status = 'active'");
  };
  const int64_t readable = h.bytes + static_cast<int64_t>(fs::file_size(live.path()));
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> pause(0.3, 3.0);
  int kills = 0;
  for (; kills < o.kills; ++kills) {
    Process d(daemon_args, log);
    SleepSeconds(pause(rng));
    CheckAlive(d, "the daemon");
    d.Kill();  // SIGKILL
    if (committed() >= readable) break;  // nothing left to interrupt
  }
  std::printf("   %d kill -9s; %.0f%% of the readable bytes committed by then\n", kills,
              100.0 * static_cast<double>(committed()) / static_cast<double>(readable));
  Process d(daemon_args, log);
  const auto restart = Clock::now();
  while (committed() < readable) {
    CheckAlive(d, "the daemon");
    if (Seconds(restart, Clock::now()) > 600) Die("not caught up 600 s after the last restart");
    SleepSeconds(0.05);
  }
  const double caught_up = Seconds(restart, Clock::now());
  const double t0 = LogNan(live);
  double alarm = -1;
  while (alarm < 0) {
    CheckAlive(d, "the daemon");
    for (const auto& req : hook.requests())
      if (req.time >= t0 && IsLiveNanAlarm(req))
        alarm = req.time - t0;
    if (testing::SteadySeconds() - t0 > 120) Die("no NaN alarm 120 s after the flush; log:\n" + d.LogTail());
    SleepSeconds(0.01);
  }
  SleepSeconds(2);  // anything sent twice would come now
  int nan_alarms = 0;
  for (const auto& req : hook.requests())
    nan_alarms += IsLiveNanAlarm(req) && req.body.find("firing") != std::string::npos;
  const std::string daemon_log = ReadFile(log);
  auto count = [&](const std::string& text) {
    int n = 0;
    for (size_t at = daemon_log.find(text); at != std::string::npos; at = daemon_log.find(text, at + 1)) ++n;
    return n;
  };
  double took = 0;
  const int st = d.Stop(10, &took);
  std::printf("   caught up %.1f s after the last start; NaN flushed -> webhook %.3f s (goal < 5 s: %s); "
              "webhook requests naming it: %d\n",
              caught_up, alarm, alarm < 5 ? "met" : "NOT met", nan_alarms);
  std::printf("   SIGTERM -> exit %.2f s (%s); log lines naming the FIFO: %d, the looping rule benched: %d; "
              "over %d starts\n",
              took, DescribeStatus(st).c_str(), count("/fifo/"), count("diagnosis rule skipped"), kills + 1);
  // The store against a one-shot ingest of the same files (the one-shot skips the FIFO and scans
  // the garbage to its end).
  const fs::path ref = work / "hostile-ref.db";
  RunOneShot(o, work, logdir, ref);
  auto dump = [](const fs::path& p) {
    Result<std::unique_ptr<store::Db>> r = store::OpenReadOnly(p.string());
    if (!r.ok()) Die("open " + p.string() + ": " + r.status().message());
    return testing::DumpStore(**r);
  };
  const std::vector<std::string> got = dump(db), want = dump(ref);
  std::vector<std::string> extra, missing;
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::printf("   store vs one-shot: %zu lines vs %zu; %zu extra (doubled), %zu missing (lost): %s\n", got.size(),
              want.size(), extra.size(), missing.size(), extra.empty() && missing.empty() ? "equal" : "DIFFERENT");
  for (size_t i = 0; i < std::min<size_t>(extra.size(), 5); ++i) std::printf("     + %s\n", extra[i].c_str());
  for (size_t i = 0; i < std::min<size_t>(missing.size(), 5); ++i) std::printf("     - %s\n", missing[i].c_str());
  RemoveDb(db);
  RemoveDb(ref);
  if (o.keep.empty()) fs::remove_all(logdir);
}

fs::path MakeWorkDir(const Options& o) {
  if (!o.keep.empty()) {
    fs::create_directories(o.keep);
    return fs::absolute(o.keep);
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tw-daemon-bench-XXXXXX";
  if (!::mkdtemp(templ.data())) Die("mkdtemp " + templ + ": " + std::strerror(errno));
  return templ;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  fs::path work;
  try {
    o = ParseArgs(argc, argv);
    if (::access(o.binary.c_str(), X_OK) != 0) Die(o.binary + " is not executable");
    work = MakeWorkDir(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "daemon_bench: %s\n", e.what());
    return 2;
  }
  struct sigaction sa{};
  sa.sa_handler = OnInterrupt;  // no SA_RESTART: a blocking wait returns EINTR
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  std::printf("daemon_bench: %s\nwork dir: %s\n", o.binary.c_str(), work.c_str());
  int rc = 0;
  try {
    if (o.latency) PartLatency(o, work);
    if (o.idle) PartIdle(o, work);
    if (o.rss) PartRss(o, work);
    if (o.backfill) PartBackfill(o, work);
    if (o.live_alarm) PartLiveAlarm(o, work);
    if (o.hostile) PartHostile(o, work);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "daemon_bench: %s\n", e.what());
    rc = 1;
  }
  if (o.keep.empty()) {
    std::error_code ec;
    fs::remove_all(work, ec);
  } else {
    std::printf("\nkept %s\n", work.c_str());
  }
  return rc;
}

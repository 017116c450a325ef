// The cost of a diagnosis cycle over many runs with one dirty run (a plain program).
//
//   diagnose_cost [--runs N] [--steps S] [--reps K] [--keep DIR] [--rules DIR]
//
// Writes N (default 10,000) small PyTorch-style runs, one event file each, S (default 50)
// steps of Loss/train, lr and grad_norm; ingests them once (timed); opens an Engine and times:
//   full cycle     ChangedRuns() (every run) + Evaluate(changed, scope_all = true)
//   quiet cycle    ChangedRuns() (none) + Evaluate(empty, scope_all = false), and the same with
//                  scope_all = true (stale_run over every run), best and median of K
//   dirty cycle    after appending 10 points to ONE run's file and ingesting again (the
//                  re-ingest is timed apart): ChangedRuns() (that run) + Evaluate(that run),
//                  with scope_all false and true, median of K (a fresh append each time)
// and the ratio dirty / full. The work dir is a fresh directory under $TMPDIR, removed at the
// end; --keep DIR works in DIR and keeps it.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "diagnose/engine.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "work_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace tw;
using Clock = std::chrono::steady_clock;

constexpr double kT0 = 1.7e9;
constexpr double kDt = 1.0;

[[noreturn]] void Die(const std::string& what) { throw std::runtime_error(what); }
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Options {
  int runs = 10000, steps = 50, reps = 5;
  std::string keep;
  std::string rules;  // --rules DIR: *.sql that replace the built-ins of the same id
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--runs") o.runs = std::max(1, std::atoi(value().c_str()));
    else if (a == "--steps") o.steps = std::max(2, std::atoi(value().c_str()));
    else if (a == "--reps") o.reps = std::max(1, std::atoi(value().c_str()));
    else if (a == "--keep") o.keep = value();
    else if (a == "--rules") o.rules = value();
    else if (a == "-h" || a == "--help") {
      std::printf("usage: diagnose_cost [--runs N] [--steps S] [--reps K] [--keep DIR] [--rules DIR]\n"
                  "  --rules DIR  rules (*.sql) that replace the built-ins of the same id: another\n"
                  "               version's rules timed by the same binary\n");
      std::exit(0);
    } else Die("unknown argument " + a + " (try --help)");
  }
  return o;
}

uint64_t Mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
double Noise(uint64_t a, uint64_t b) {  // [-0.5, 0.5)
  return static_cast<double>(Mix(a * 1000003u + b) >> 11) * 0x1p-53 - 0.5;
}

// The events of steps [from, to) of run `r`.
void AddSteps(testing::EventFileWriter& w, int r, int64_t from, int64_t to) {
  for (int64_t s = from; s < to; ++s) {
    const double wall = kT0 + static_cast<double>(s) * kDt;
    const double loss = (0.3 + 2.0 * std::pow(1 + s / 20.0, -0.7)) * std::exp(0.05 * Noise(r, s));
    w.Add(testing::SimpleScalarEvent("Loss/train", s, wall, static_cast<float>(loss)));
    w.Add(testing::SimpleScalarEvent("lr", s, wall, static_cast<float>(1e-3 * (1 - 0.5 * s / 1000.0))));
    w.Add(testing::SimpleScalarEvent("grad_norm", s, wall, static_cast<float>(0.5 + 0.1 * Noise(r + 7, s))));
  }
}

std::string RunDir(const std::string& root, int r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "/exp_%02d/run_%05d", r % 100, r);
  return root + buf;
}
std::string FileName() { return testing::EventFileName(1700000000, "host", 4242, 0); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int Main(const Options& opt) {
  const bench::WorkDir dir(opt.keep, "diagnose-cost", {"logs", "tw.db", "tw.db-wal", "tw.db-shm"});
  const std::string& work = dir.path();
  const std::string root = work + "/logs", db = work + "/tw.db";

  auto a = Clock::now();
  for (int r = 0; r < opt.runs; ++r) {
    testing::EventFileWriter w(RunDir(root, r) + "/" + FileName());
    w.Add(testing::FileVersionEvent(kT0, testing::kTorchSourceWriter));
    AddSteps(w, r, 0, opt.steps);
    w.Flush();
  }
  auto b = Clock::now();
  const double write_s = Seconds(a, b);

  std::unique_ptr<store::Store> store;
  {
    Result<std::unique_ptr<store::Store>> s = store::Store::Open(db);
    if (!s.ok()) Die("store: " + s.status().ToString());
    store = std::move(*s);
  }
  auto ingest = [&]() {
    ingest::Summary summary;
    const auto t = Clock::now();
    Status s = ingest::IngestPaths(*store, {root}, {}, &summary);
    if (!s.ok()) Die("ingest: " + s.ToString());
    return Seconds(t, Clock::now());
  };
  const double ingest_s = ingest();

  a = Clock::now();
  diagnose::EngineOptions engine_options;
  engine_options.rules_dir = opt.rules;
  Result<std::unique_ptr<diagnose::Engine>> opened = diagnose::Engine::Open(db, engine_options);
  if (!opened.ok()) Die("engine: " + opened.status().ToString());
  diagnose::Engine& engine = **opened;
  for (const auto& e : engine.load_errors()) std::printf("rule load error: %s\n", e.c_str());
  const double open_s = Seconds(a, Clock::now());

  int64_t last_step = opt.steps - 1;
  double now = kT0 + static_cast<double>(last_step) * kDt + 10;
  struct Cycle {
    double changed_s = 0, eval_s = 0;
    size_t changed = 0, examined = 0, observations = 0;
    std::map<std::string, double> rule_seconds;
    double total() const { return changed_s + eval_s; }
  };
  auto cycle = [&](bool scope_all) {
    Cycle c;
    auto t = Clock::now();
    Result<std::vector<int64_t>> changed = engine.ChangedRuns();
    if (!changed.ok()) Die("ChangedRuns: " + changed.status().ToString());
    auto u = Clock::now();
    Result<diagnose::Evaluation> ev = engine.Evaluate(&*changed, now, scope_all);
    if (!ev.ok()) Die("Evaluate: " + ev.status().ToString());
    auto v = Clock::now();
    for (const auto& e : ev->errors) std::printf("rule error: %s\n", e.message.c_str());
    c.changed_s = Seconds(t, u);
    c.eval_s = Seconds(u, v);
    c.changed = changed->size();
    c.examined = ev->examined.size();
    c.observations = ev->observations.size();
    c.rule_seconds = ev->rule_seconds;
    return c;
  };

  const Cycle full = cycle(true);
  std::vector<double> quiet, quiet_all;
  for (int i = 0; i < opt.reps; ++i) {
    const Cycle q = cycle(false);
    const Cycle qa = cycle(true);
    if (q.changed || qa.changed) Die("a quiet cycle found changed runs");
    quiet.push_back(q.total());
    quiet_all.push_back(qa.total());
  }

  // One dirty run: append points to run 0's file (framed by the test writer into a scratch
  // file, then appended to the real file, as a live writer appends), ingest, re-examine.
  const std::string dirty_file = RunDir(root, 0) + "/" + FileName();
  const std::string scratch = work + "/scratch.tfevents";
  std::vector<double> reingest, dirty, dirty_all, dirty_changed, dirty_eval;
  Cycle last{};
  for (int i = 0; i < opt.reps; ++i) {
    for (int scope = 0; scope < 2; ++scope) {
      {
        testing::EventFileWriter w(scratch);
        AddSteps(w, 0, last_step + 1, last_step + 11);
        w.Flush();
        last_step += 10;
        now = kT0 + static_cast<double>(last_step) * kDt + 10;
        std::ifstream in(scratch, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::ofstream out(dirty_file, std::ios::binary | std::ios::app);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      }
      reingest.push_back(ingest());
      const Cycle d = cycle(scope == 1);
      if (d.changed != 1) Die("the dirty cycle found " + std::to_string(d.changed) + " changed runs, not 1");
      (scope ? dirty_all : dirty).push_back(d.total());
      if (!scope) dirty_changed.push_back(d.changed_s), dirty_eval.push_back(d.eval_s), last = d;
    }
  }

  std::printf("diagnose_cost: %d runs x %d steps x 3 tags (%lld points)\n", opt.runs, opt.steps,
              static_cast<long long>(opt.runs) * opt.steps * 3);
  std::printf("  write %.2f s, ingest %.2f s, Engine::Open %.3f s\n\n", write_s, ingest_s, open_s);
  std::printf("%-44s %10s %10s\n", "cycle (ChangedRuns + Evaluate)", "seconds", "runs");
  std::printf("%-44s %10.3f %10zu   (ChangedRuns %.3f s, Evaluate %.3f s)\n", "full (first) cycle, scope_all", full.total(),
              full.changed, full.changed_s, full.eval_s);
  std::printf("%-44s %10.4f %10d   (median of %d; best %.4f)\n", "quiet cycle, scope_all=false", Median(quiet), 0,
              opt.reps, *std::min_element(quiet.begin(), quiet.end()));
  std::printf("%-44s %10.4f %10d   (median of %d; best %.4f)\n", "quiet cycle, scope_all=true (stale_run)",
              Median(quiet_all), 0, opt.reps, *std::min_element(quiet_all.begin(), quiet_all.end()));
  std::printf("%-44s %10.4f %10d   (median of %d; ChangedRuns %.4f s, Evaluate %.4f s)\n",
              "one dirty run, scope_all=false", Median(dirty), 1, opt.reps, Median(dirty_changed), Median(dirty_eval));
  std::printf("%-44s %10.4f %10d   (median of %d)\n", "one dirty run, scope_all=true", Median(dirty_all), 1, opt.reps);
  std::printf("%-44s %10.4f\n", "(re-ingest after the append, not a cycle)", Median(reingest));
  std::printf("\nratio one-dirty / full: %.5f (scope_all=false), %.5f (scope_all=true)\n",
              Median(dirty) / full.total(), Median(dirty_all) / full.total());
  std::printf("\nfull cycle, seconds per rule:");
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [id, s] : full.rule_seconds) top.push_back({s, id});
  std::sort(top.rbegin(), top.rend());
  for (const auto& [s, id] : top) std::printf(" %s %.2f;", id.c_str(), s);
  std::printf("\nfull cycle: %zu runs examined, %zu observations\n", full.examined, full.observations);
  if (!opt.keep.empty()) std::printf("kept %s\n", work.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(ParseArgs(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "diagnose_cost: %s\n", e.what());
    return 2;
  }
}

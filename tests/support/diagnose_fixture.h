// A fixture for diagnosis tests on generated runs: a temporary logdir, runs written in PyTorch's
// style from one curve per tag, a real store, one evaluation by the engine, and lookups of what
// fired. Header-only test code.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "diagnose/engine.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "support/test_env.h"

namespace tw::testing {

inline constexpr double kRunT0 = 1.7e9;  // wall time of step 0
inline constexpr double kRunDt = 0.5;    // seconds per step

using Curve = std::function<double(int64_t step)>;
struct Tag {
  std::string name;
  Curve f;
  int every = 1;  // log every N steps
};

class DiagnoseFixture : public ::testing::Test {
 protected:
  TempDir dir_;

  std::string Root() const { return dir_ / "logs"; }
  std::string Db() const { return dir_ / "tw.db"; }

  // One event file in Root()/run: `extra_events` first, then each tag at every `every` steps.
  void WriteRun(const std::string& run, int64_t steps, const std::vector<Tag>& tags,
                const std::vector<std::string>& extra_events = {}, double t0 = kRunT0) {
    EventFileWriter w(Root() + "/" + run + "/" + EventFileName(1700000000, "host", 1, 0));
    w.Add(FileVersionEvent(t0));
    for (const auto& e : extra_events) w.Add(e);
    for (int64_t s = 0; s < steps; ++s)
      for (const auto& t : tags)
        if (s % t.every == 0) w.Add(SimpleScalarEvent(t.name, s, t0 + s * kRunDt, static_cast<float>(t.f(s))));
    w.Flush();
  }

  // Ingests `paths` (default: the generated logdir) into Db().
  void Ingest(const std::vector<std::string>& paths = {}) {
    Result<std::unique_ptr<store::Store>> store = store::Store::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ingest::Summary summary;
    ASSERT_TRUE(ingest::IngestPaths(**store, paths.empty() ? std::vector<std::string>{Root()} : paths, {},
                                    &summary).ok());
  }

  // Every rule once over what Db() holds, as of `now` (null: `after_last` seconds after the
  // last point; an hour by default, when the runs are finished history and no stale-run
  // question arises).
  diagnose::Evaluation EvaluateStore(diagnose::EngineOptions options, std::optional<double> now,
                                     double after_last = 3600) {
    Result<std::unique_ptr<diagnose::Engine>> engine = diagnose::Engine::Open(Db(), std::move(options));
    EXPECT_TRUE(engine.ok()) << engine.status().message();
    if (!engine.ok()) return {};
    EXPECT_TRUE((*engine)->load_errors().empty()) << (*engine)->load_errors().front();
    if (!now) {
      Result<store::Stmt> last = (*engine)->db().Prepare("SELECT max(wall_time) FROM scalars");
      EXPECT_TRUE(last.ok() && *last->Step());
      now = last->Real(0) + after_last;
    }
    Result<diagnose::Evaluation> ev = (*engine)->Evaluate(nullptr, *now);
    EXPECT_TRUE(ev.ok()) << ev.status().message();
    if (!ev.ok()) return {};
    for (const auto& e : ev->errors) ADD_FAILURE() << e;
    return std::move(*ev);
  }

  // The unmuted observations of `rule` on the runs `run` names: the run itself, or with
  // `containing`, every run whose name holds it (real runs have long paths).
  static std::vector<diagnose::Observation> Of(const diagnose::Evaluation& ev, const std::string& rule,
                                               const std::string& run, bool containing = false) {
    std::vector<diagnose::Observation> out;
    for (const auto& o : ev.observations)
      if (o.rule == rule && Names(o.run, run, containing) && o.muted_by.empty()) out.push_back(o);
    return out;
  }
  // Warnings or worse (what a healthy run must not have), as "rule: message".
  static std::vector<std::string> Alarms(const diagnose::Evaluation& ev, const std::string& run,
                                         bool containing = false) {
    std::vector<std::string> out;
    for (const auto& o : ev.observations)
      if (Names(o.run, run, containing) && o.muted_by.empty() && o.severity >= diagnose::Severity::kWarning)
        out.push_back(o.rule + " on " + o.series + ": " + o.message);
    return out;
  }

 private:
  static bool Names(const std::string& name, const std::string& run, bool containing) {
    return containing ? name.find(run) != std::string::npos : name == run;
  }
};

// For tests on real runs: their names are paths under the directory ingested, so lookups match
// a part of the name; the committed CPU runs and held-out runs are at hand, copied into the
// logdir under a name of the test's choosing.
class RealRunsFixture : public DiagnoseFixture {
 protected:
  std::mt19937 rng_{7};

  double Noise(double sd) { return std::exp(std::normal_distribution<double>(0, sd)(rng_)); }

  // Ingests `paths` (default: the generated logdir) and evaluates every rule an hour after the
  // last point.
  diagnose::Evaluation Evaluate(const std::vector<std::string>& paths = {}, diagnose::EngineOptions options = {}) {
    Ingest(paths);
    return EvaluateStore(std::move(options), std::nullopt);
  }
  static std::vector<diagnose::Observation> Of(const diagnose::Evaluation& ev, const std::string& rule,
                                               const std::string& run) {
    return DiagnoseFixture::Of(ev, rule, run, /*containing=*/true);
  }
  static std::vector<std::string> Alarms(const diagnose::Evaluation& ev, const std::string& run) {
    return DiagnoseFixture::Alarms(ev, run, /*containing=*/true);
  }
  // `rule`'s findings on `run` about one series.
  static std::vector<diagnose::Observation> On(const diagnose::Evaluation& ev, const std::string& rule,
                                               const std::string& run, const std::string& series) {
    std::vector<diagnose::Observation> out;
    for (auto& o : Of(ev, rule, run))
      if (o.series == series) out.push_back(o);
    return out;
  }
  // How many series of the runs whose names contain `run` play `role`: a test that a rule stays
  // quiet on a run must first know the rule could run there.
  size_t RoleCount(const std::string& run, const std::string& role) {
    Result<std::unique_ptr<diagnose::Engine>> e = diagnose::Engine::Open(Db(), {});
    if (!e.ok()) return 0;
    Result<diagnose::RoleMap> map = (*e)->Roles(nullptr);
    if (!map.ok()) return 0;
    size_t n = 0;
    for (const auto& a : map->assignments) n += a.run.find(run) != std::string::npos && a.role == role;
    return n;
  }

  static std::string CpuRuns() { return TW_CPU_RUNS_DIR; }
  static std::string HeldOut() { return TW_HELDOUT_DIR; }
  // A copy of the run directory `from` as Root()/`as`.
  void CopyRun(const std::string& from, const std::string& as) {
    std::filesystem::create_directories(Root());
    std::filesystem::copy(from, Root() + "/" + as, std::filesystem::copy_options::recursive);
  }
};

}  // namespace tw::testing

// Declares `var` as the directory `expr` names, or skips the test (loudly) when it is absent.
#define REQUIRE_DIR(var, expr)  \
  const std::string var = (expr); \
  if (var.empty()) GTEST_SKIP() << #expr " found nothing (../shared beside the checkout?)"
#define REQUIRE_SICK_CORPUS() REQUIRE_DIR(sick, ::tw::testing::CorpusSickDir())

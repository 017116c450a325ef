// Diagnosis of W&B runs in the trainer's own steps: a `.wandb` log written by the test writer
// declares define_metric("train/*", step_metric="train/global_step") as the HF Trainer does,
// its loss turns NaN, and the finding (whose steps stay W&B's `_step`) also says the trainer's
// global step at its onset, first and last steps.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "diagnose/engine.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/test_env.h"
#include "wandb/testing/log_writer.h"

namespace tw::diagnose {
namespace {

using namespace tw::testing;

constexpr double kT0 = 1700000000;
constexpr int64_t kNanFrom = 301;  // the `_step` the loss turns NaN at

// The trainer's global step at W&B's `_step` k (gradient accumulation: 8 per row, from 16).
int64_t GlobalStep(int64_t k) { return 16 + 8 * k; }

class DiagnoseWandb : public ::testing::Test {
 protected:
  TempDir dir_;

  // A run of 500 history rows with train/loss, train/global_step on even `_step`s only (so a
  // finding's step may fall between two of its points), train/* plotted against `metric`.
  void WriteRun(const std::string& id, const std::string& metric, bool nan = true) {
    WandbLogWriter w;
    int64_t num = 0;
    w.Add(WandbRunRecord(++num, {.run_id = id, .project = "p", .start_time = kT0}));
    w.Add(WandbMetricRecord(++num, "", "train/*", metric));
    for (int64_t k = 0; k < 500; ++k) {
      const double loss = nan && k >= kNanFrom ? NAN : 0.3 + 2.0 * std::pow(1 + k / 50.0, -0.7);
      std::vector<WandbKV> items = {Flat("train/loss", PyJsonNumber(loss))};
      if (k % 2 == 0) items.push_back(Flat("train/global_step", std::to_string(GlobalStep(k))));
      w.Add(WandbPythonRow(++num, k, kT0 + k, items));
    }
    WriteFile(dir_ / ("logs/wandb/run-20240101_000000-" + id + "/run-" + id + ".wandb"), w.bytes());
  }

  Evaluation Evaluate() {
    {
      Result<std::unique_ptr<store::Store>> store = store::Store::Open(dir_ / "tw.db");
      EXPECT_TRUE(store.ok()) << store.status().message();
      ingest::Summary summary;
      EXPECT_TRUE(ingest::IngestPaths(**store, {dir_ / "logs"}, {}, &summary).ok());
      EXPECT_EQ(summary.totals.errors, 0);
    }
    Result<std::unique_ptr<Engine>> engine = Engine::Open(dir_ / "tw.db", {});
    EXPECT_TRUE(engine.ok()) << engine.status().message();
    if (!engine.ok()) return {};
    engine_ = std::move(*engine);
    Result<Evaluation> ev = engine_->Evaluate(nullptr, kT0 + 1e6);
    EXPECT_TRUE(ev.ok()) << ev.status().message();
    for (const auto& e : ev->errors) ADD_FAILURE() << e;
    return ev.ok() ? std::move(*ev) : Evaluation{};
  }

  static const Observation* NanOn(const Evaluation& ev, const std::string& id) {
    for (const auto& o : ev.observations)
      if (o.rule == "non_finite_loss" && o.run.ends_with(id)) return &o;
    return nullptr;
  }

  // json_extract(evidence, path) for each path, joined by '|' ("NULL" where absent).
  std::string Extract(const std::string& evidence, const std::vector<std::string>& paths) {
    std::string out;
    for (const auto& p : paths) {
      Result<store::Stmt> q = engine_->db().Prepare("SELECT json_extract(?1, ?2), json_valid(?1)");
      EXPECT_TRUE(q.ok());
      q->Bind(1, evidence).Bind(2, p);
      EXPECT_TRUE(*q->Step());
      EXPECT_EQ(q->Int(1), 1) << evidence;
      out += (out.empty() ? "" : "|") + (q->IsNull(0) ? std::string("NULL") : q->Text(0));
    }
    return out;
  }

  std::unique_ptr<Engine> engine_;
};

TEST_F(DiagnoseWandb, AFindingSaysTheTrainersStepBesideWandbsStep) {
  WriteRun("hftrain1", "train/global_step");
  Evaluation ev = Evaluate();
  const Observation* o = NanOn(ev, "hftrain1");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->series, "train/loss");
  EXPECT_EQ(o->onset_step, kNanFrom) << "the contract's steps stay W&B's _step";
  ASSERT_TRUE(o->last_step.has_value());
  // _step 301 falls between two global_step points: the one at 300 holds there.
  const int64_t onset = GlobalStep(kNanFrom - 1), last = GlobalStep(*o->last_step - *o->last_step % 2);
  EXPECT_EQ(Extract(o->evidence, {"$.step_metric", "$.step_metric_onset", "$.step_metric_last",
                                  "$.first_non_finite_step"}),
            "train/global_step|" + std::to_string(onset) + "|" + std::to_string(last) + "|" +
                std::to_string(kNanFrom))
      << o->evidence;
  EXPECT_TRUE(o->message.ends_with(" (train/global_step " + std::to_string(onset) + " at the onset)"))
      << o->message;
}

TEST_F(DiagnoseWandb, NoStepMetricSeriesNoTrainerStep) {
  // define_metric names an x axis the run never logs: nothing to translate with.
  WriteRun("hftrain2", "train/never_logged");
  Evaluation ev = Evaluate();
  const Observation* o = NanOn(ev, "hftrain2");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->onset_step, kNanFrom);
  EXPECT_EQ(Extract(o->evidence, {"$.step_metric", "$.step_metric_onset"}), "NULL|NULL") << o->evidence;
  EXPECT_EQ(o->message.find("train/never_logged"), std::string::npos) << o->message;
}

TEST_F(DiagnoseWandb, TheForecastIsInTheTrainersSteps) {
  // A healthy run: its verdict's forecast runs to twice the last trainer step (the loss has a
  // global step on even _steps, the last at 498), not to twice the last _step.
  WriteRun("hftrain3", "train/global_step", /*nan=*/false);
  WriteRun("hftrain4", "train/never_logged", /*nan=*/false);
  Evaluation ev = Evaluate();
  std::map<std::string, std::string> forecast;
  for (const auto& v : ev.verdicts) forecast[v.run.substr(v.run.size() - 8)] = v.forecast;
  EXPECT_NE(forecast["hftrain3"].find(" by train/global_step " + std::to_string(2 * GlobalStep(498)) + " "),
            std::string::npos)
      << forecast["hftrain3"];
  EXPECT_NE(forecast["hftrain4"].find(" by step 998 "), std::string::npos) << forecast["hftrain4"];
}

}  // namespace
}  // namespace tw::diagnose

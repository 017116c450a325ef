// Diagnosis of the shapes real runs show and the rules once missed: a loss at chance from the
// first step, a loss non-finite from the first point, a loss diving below zero, a converged
// floor (no plateau), spikes and swings in short runs, a warmup that never ends, and overfitting
// seen on a validation metric. Two kinds of test: real runs from ../shared/corpus-sick
// (labeled in its PATHOLOGIES.md; skipped, loudly, when absent) and generated runs for the
// shapes no file there shows.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <random>

#include "diagnose/engine.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/diagnose_fixture.h"
#include "support/test_env.h"

namespace tw::diagnose {
namespace {

using testing::Curve;
using testing::Tag;

constexpr double kT0 = testing::kRunT0;
constexpr double kDt = testing::kRunDt;

using RealWorldTest = testing::RealRunsFixture;

// --- 1. A loss at chance from the first step ---------------------------------------------------

// Real runs: ln 10 for 10 epochs with val_acc 0.109 (the data set's majority share, about 1/10);
// the MSE on one-hot targets at (K-1)/K^2 = 0.09 for 20 epochs; and a loss that started at ln 3
// and left it at once (a plateau at 0.745 afterwards, which loss_plateau reports): not at chance.
TEST_F(RealWorldTest, LossAtChanceOnRealRuns) {
  REQUIRE_SICK_CORPUS();
  Evaluation ev = Evaluate({sick + "/wandb-core-0.25/ashishmeshram229__DA6401-Assignment-1/wandb",
                            sick + "/wandb-legacy-0.8/MoonBlvd__mil_ucf_cvpr2018/wandb"});
  auto ce = Of(ev, "loss_at_chance", "xf4an76b");
  ASSERT_EQ(ce.size(), 1u);
  EXPECT_EQ(ce[0].severity, Severity::kWarning);
  EXPECT_EQ(ce[0].onset_step, 0);
  EXPECT_NE(ce[0].message.find("ln 10"), std::string::npos) << ce[0].message;
  auto mse = Of(ev, "loss_at_chance", "0i72n3dd");
  ASSERT_EQ(mse.size(), 1u);
  EXPECT_NE(mse[0].message.find("(K-1)/K^2 for K = 10"), std::string::npos) << mse[0].message;
  EXPECT_TRUE(Of(ev, "loss_at_chance", "k1zry8jk").empty());
  EXPECT_EQ(Of(ev, "loss_plateau", "k1zry8jk").size(), 1u);
  EXPECT_TRUE(Of(ev, "loss_at_chance", "8ojozwo6").empty());  // healthy: 0.99 -> 0.015
}

// Generated: where K comes from (hparams, an accuracy, a common class count), an S-curve that
// stays quiet, a short flat start, a classifier that learns. (A stuck run long enough for
// loss_plateau gets both: the plateau says flat, this rule says why.)
TEST_F(RealWorldTest, LossAtChanceNeedsALongStayAndResolvesWhenItDrops) {
  const double ln10 = std::log(10.0);
  auto at = [this](double level) { return [this, level](int64_t) { return level * Noise(0.005); }; };
  // K = 7 from hparams (no common class count): labels shuffled apart from their inputs.
  WriteRun("hparams_k7", 2000, {{"train/loss", at(std::log(7.0)), 10}},
           {testing::HParamsStartEvent(kT0, {{"num_classes", 7.0}, {"lr", 1e-3}}, false)});
  // K = 10 from nothing but the value: the first values sit within 1.5% of ln 10.
  WriteRun("bare_k10", 3000, {{"loss", at(ln10)}});
  // ln 100 with an accuracy at 1/100, logged per epoch (12 epochs).
  WriteRun("epochs_k100", 12, {{"train_loss", at(std::log(100.0))},
                               {"val_acc", [](int64_t) { return 0.0101; }},
                               {"epoch", [](int64_t s) { return static_cast<double>(s); }}});
  // An S-curve: flat at ln 10 for 600 steps, then learning. Quiet at the end, and quiet while
  // the flat stretch is still short (the same run cut at step 590, still flat: 590 steps and
  // five minutes at chance are what a classifier's first steps look like).
  auto s_curve = [this, ln10](int64_t t) {
    return (t < 600 ? ln10 : 0.3 + (ln10 - 0.3) * std::exp(-(t - 600) / 200.0)) * Noise(0.005);
  };
  WriteRun("s_curve", 3000, {{"loss", s_curve}});
  WriteRun("early_flat", 590, {{"loss", s_curve}});
  // A classifier that learns: starts at ln 10 and falls.
  WriteRun("learns", 3000, {{"loss", [this, ln10](int64_t t) { return (0.2 + (ln10 - 0.2) * std::exp(-t / 300.0)) * Noise(0.02); }},
                            {"val_acc", [](int64_t t) { return 0.1 + 0.8 * (1 - std::exp(-t / 300.0)); }, 100}});
  // A loss near ln 10 with the accuracy well above chance: not a guess (a regression loss that
  // happens to sit there).
  WriteRun("acc_high", 3000, {{"loss", at(ln10)}, {"val_acc", [](int64_t) { return 0.6; }, 100}});
  Evaluation ev = Evaluate();

  auto k7 = Of(ev, "loss_at_chance", "hparams_k7");
  ASSERT_EQ(k7.size(), 1u);
  EXPECT_NE(k7[0].message.find("num_classes = 7"), std::string::npos) << k7[0].message;
  ASSERT_EQ(Of(ev, "loss_at_chance", "bare_k10").size(), 1u);
  EXPECT_EQ(Of(ev, "loss_at_chance", "bare_k10")[0].onset_step, 0);
  auto k100 = Of(ev, "loss_at_chance", "epochs_k100");
  ASSERT_EQ(k100.size(), 1u);
  EXPECT_NE(k100[0].message.find("ln 100"), std::string::npos) << k100[0].message;
  EXPECT_TRUE(Of(ev, "loss_at_chance", "s_curve").empty());
  EXPECT_TRUE(Of(ev, "loss_at_chance", "early_flat").empty());
  EXPECT_TRUE(Of(ev, "loss_at_chance", "learns").empty());
  EXPECT_TRUE(Of(ev, "loss_at_chance", "acc_high").empty());
}

// Generated: what initial_loss_high will not judge. The same curve (20x ln 10 at step 0, undone
// in 50 steps) is caught with K in the hparams, and quiet without one (a guessed K cannot tell
// a bad init from a loss of another scale), with a CTC setting in the hparams (a CTC loss is
// summed over frames), under an MSE tag, and when the loss climbs from its first point (that
// is divergence, not a high start). K from the largest class count named: a fine-tuned model's
// num_labels = 2 beside vocab_size = 30522 is judged against ln 30522.
TEST_F(RealWorldTest, InitialLossHighNeedsKFromTheHparams) {
  const double ln10 = std::log(10.0);
  auto high = [this, ln10](int64_t t) { return (ln10 * (1 + 19 * std::exp(-t / 10.0)) * std::exp(-t / 400.0)) * Noise(0.02); };
  auto k10 = [](std::vector<std::pair<std::string, testing::HParamValue>> more) {
    more.emplace_back("num_classes", 10.0);
    return std::vector<std::string>{testing::HParamsStartEvent(kT0, more, false)};
  };
  WriteRun("with_k", 1000, {{"train/loss", high}}, k10({}));
  WriteRun("no_k", 1000, {{"train/loss", high}});
  WriteRun("ctc", 1000, {{"train/loss", high}}, k10({{"ctc_loss_reduction", std::string("sum")}}));
  WriteRun("mse_tag", 1000, {{"train/mse_loss", high}}, k10({}));
  WriteRun("climbs", 1000, {{"train/loss", [this, ln10](int64_t t) { return ln10 * (3 + t / 10.0) * Noise(0.02); }}}, k10({}));
  // 11.5 at step 0: 16.6x ln 2, but 1.1x ln 30522.
  auto five = [this, ln10](int64_t t) { return (ln10 * (1 + 4 * std::exp(-t / 10.0)) * std::exp(-t / 400.0)) * Noise(0.02); };
  WriteRun("largest_k", 1000, {{"train/loss", five}},
           {testing::HParamsStartEvent(kT0, {{"num_labels", 2.0}, {"vocab_size", 30522.0}}, false)});
  WriteRun("small_k", 1000, {{"train/loss", five}}, {testing::HParamsStartEvent(kT0, {{"num_labels", 2.0}}, false)});
  Evaluation ev = Evaluate();
  auto caught = Of(ev, "initial_loss_high", "with_k");
  ASSERT_EQ(caught.size(), 1u);
  EXPECT_EQ(caught[0].onset_step, 0);
  EXPECT_EQ(caught[0].severity, Severity::kInfo);  // it came below ln 10: the run undid its init
  EXPECT_EQ(Of(ev, "initial_loss_high", "small_k").size(), 1u);
  for (const char* run : {"no_k", "ctc", "mse_tag", "climbs", "largest_k"})
    for (const auto& o : Of(ev, "initial_loss_high", run)) ADD_FAILURE() << run << ": " << o.message;
}

// --- 2. Non-finite from the first point ------------------------------------------------------

TEST_F(RealWorldTest, NonFiniteFromTheFirstPointOnRealRuns) {
  REQUIRE_SICK_CORPUS();
  EngineOptions o;  // the W&B keys end with a space; role inference is not under test here
  o.roles = {{"train_loss", "training loss*", "", "test"}, {"val_loss", "validation loss*", "", "test"}};
  Evaluation ev = Evaluate({sick + "/wandb-0.16-python/AbhishekKarmakar5__Feed-forward-neural-network-implementation-from-scratch/wandb",
                            sick + "/pytorch-lightning-2.x/Debajyoti2004__Brain_tumor_disease/lightning_logs"}, o);
  for (const std::string run : {"0gkgcqjt", "version_3"}) {
    SCOPED_TRACE(run);
    auto n = Of(ev, "non_finite_loss", run);
    ASSERT_FALSE(n.empty());
    EXPECT_EQ(n[0].severity, Severity::kCritical);
    EXPECT_NE(n[0].message.find("never finite"), std::string::npos) << n[0].message;
    EXPECT_TRUE(Of(ev, "loss_at_chance", run).empty());
  }
  EXPECT_EQ(Of(ev, "non_finite_loss", "0gkgcqjt")[0].onset_step, 0);
}

TEST_F(RealWorldTest, NonFiniteFromTheFirstPointInEveryForm) {
  WriteRun("nan_all", 300, {{"loss", [](int64_t) { return NAN; }, 10}});
  WriteRun("pinf_all", 300, {{"loss", [](int64_t) { return INFINITY; }, 10}});
  WriteRun("ninf_all", 300, {{"loss", [](int64_t) { return -INFINITY; }, 10}});
  WriteRun("val_only", 300, {{"loss", [this](int64_t t) { return 2.0 * std::pow(1 + t / 50.0, -0.5) * Noise(0.02); }},
                             {"val_loss", [](int64_t) { return INFINITY; }, 50}});
  Evaluation ev = Evaluate();
  const std::map<std::string, std::string> kind = {
      {"nan_all", "NaN"}, {"pinf_all", "+Inf"}, {"ninf_all", "-Inf"}, {"val_only", "+Inf"}};
  for (const auto& [run, k] : kind) {
    SCOPED_TRACE(run);
    auto n = Of(ev, "non_finite_loss", run);
    ASSERT_EQ(n.size(), 1u);
    EXPECT_EQ(n[0].severity, Severity::kCritical);
    EXPECT_EQ(n[0].onset_step, 0);
    EXPECT_NE(n[0].message.find(" is " + k + " from step 0 (it was never finite)"), std::string::npos) << n[0].message;
  }
  EXPECT_EQ(Of(ev, "non_finite_loss", "val_only")[0].series, "val_loss");
}

// --- 3. Divergence downwards -------------------------------------------------------------------

// An energy-based loss that dives from O(1) to -1e18 has diverged; being negative is not a
// problem in itself (an RL objective around -12), nor is a maximised objective rising through
// zero (an ELBO from -5.6e5 to +3.8e6, as beta-tcvae logs it), nor a loss that crossed zero and
// grew a few times in size.
TEST_F(RealWorldTest, LossDivingBelowZeroIsADivergence) {
  WriteRun("ebm_dive", 2000, {{"loss", [this](int64_t t) {
                                return t < 1000 ? 0.8 * Noise(0.1) - 0.3 : -std::exp((t - 1000) / 1000.0 * std::log(1e18)) * Noise(0.1);
                              }}});
  WriteRun("rl_negative", 2000, {{"loss", [this](int64_t) { return -12.0 * Noise(0.1); }}});
  WriteRun("elbo_rising", 870, {{"loss", [this](int64_t t) {
                                   return (-5.6e5 + 4.4e6 * (1 - std::exp(-t / 150.0))) * Noise(0.02);
                                 }}});
  WriteRun("crosses_zero", 2000, {{"loss", [this](int64_t t) { return 1.0 - 6.0 * t / 2000.0 + 0.1 * std::log(Noise(1)); }}});
  Evaluation ev = Evaluate();
  auto d = Of(ev, "loss_divergence", "ebm_dive");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, Severity::kCritical);
  EXPECT_NEAR(static_cast<double>(*d[0].onset_step), 1000, 0.05 * 2000);
  EXPECT_NE(d[0].message.find("dived below zero"), std::string::npos) << d[0].message;
  for (const std::string run : {"rl_negative", "elbo_rising", "crosses_zero"}) {
    SCOPED_TRACE(run);
    EXPECT_TRUE(Of(ev, "loss_divergence", run).empty());
  }
}

TEST_F(RealWorldTest, ElboRisingThroughZeroOnARealRunIsNoDivergence) {
  REQUIRE_SICK_CORPUS();
  EngineOptions o;  // as if role inference took the ELBO for the training loss
  o.roles = {{"train_loss", "train_elbo", "", "test"}};
  Evaluation ev = Evaluate({sick + "/wandb-0.13-python/A-Ijishakin__beta-tcvae/wandb"}, o);
  EXPECT_TRUE(Of(ev, "loss_divergence", "n748obmj").empty());
}

// --- 4. A converged floor is not a plateau -----------------------------------------------------

// The FNO run: 0.754 -> 0.00146 at epoch 80 -> 0.00103 flat to epoch 299. And generated: a
// loss that fell 25x and then flattened for three quarters of a long run (converged) against one
// stuck after a 3x drop (a plateau).
TEST_F(RealWorldTest, ConvergedFloorIsNoPlateau) {
  WriteRun("fell_25x", 4000, {{"loss", [this](int64_t t) {
                                return (t < 1000 ? 2.0 * std::pow(25.0, -t / 1000.0) : 0.08) * Noise(0.03);
                              }},
                              {"lr", [](int64_t) { return 1e-3; }, 10}});
  WriteRun("fell_3x", 4000, {{"loss", [this](int64_t t) {
                               return (t < 1000 ? 2.0 * std::pow(3.0, -t / 1000.0) : 2.0 / 3) * Noise(0.03);
                             }},
                             {"lr", [](int64_t) { return 1e-3; }, 10}});
  std::vector<std::string> paths = {Root()};
  EngineOptions o;
  const std::string sick = testing::CorpusSickDir();
  if (!sick.empty()) {
    paths.push_back(sick + "/wandb-core-0.20/imkannadiga__flow-matching-pde/wandb-logs/FNO/wandb");
    o.roles = {{"train_loss", "training_loss", "", "test"}, {"val_loss", "evaluation_loss", "", "test"}};
  }
  Evaluation ev = Evaluate(paths, o);
  EXPECT_TRUE(Of(ev, "loss_plateau", "fell_25x").empty());
  EXPECT_EQ(Alarms(ev, "fell_25x"), std::vector<std::string>{});
  EXPECT_EQ(Of(ev, "loss_plateau", "fell_3x").size(), 1u);
  if (!sick.empty()) {
    EXPECT_EQ(Alarms(ev, "8ymxhcfn"), std::vector<std::string>{});
  }
}

// --- 5. Short runs: spikes and swings ----------------------------------------------------------

// 40 points (an epoch each): five spikes of 10-100x are recurring spikes (the 100-point window
// would never fill); swings with a period of 4 and of 8 points are oscillation (a 5-point
// rolling median erases them). Healthy noisy short runs (15% per point) stay quiet.
TEST_F(RealWorldTest, ShortRunsHaveSpikesAndSwingsToo) {
  auto level = [](int64_t t) { return 0.4 + 2.0 * std::pow(1 + t / 3.0, -0.8); };
  const std::map<int64_t, double> at = {{12, 10}, {17, 30}, {23, 100}, {28, 20}, {34, 50}};
  WriteRun("short_spikes", 40, {{"loss", [&](int64_t t) {
                                  auto it = at.find(t);
                                  return level(t) * Noise(0.05) * (it == at.end() ? 1.0 : it->second);
                                }}});
  for (int period : {4, 8})
    WriteRun("short_swing_p" + std::to_string(period), 40, {{"loss", [&, period](int64_t t) {
               const double swing = t < 8 ? 1.0 : std::exp(0.6 * std::sin(2 * M_PI * (t - 8) / period + 0.3));
               return std::min(level(t), level(8)) * swing * Noise(0.05);
             }}});
  for (int i = 0; i < 4; ++i)
    WriteRun("short_noisy_" + std::to_string(i), 40, {{"loss", [&](int64_t t) { return level(t) * Noise(0.15); }}});
  Evaluation ev = Evaluate();
  if (std::getenv("TW_DEBUG_KEEP")) std::filesystem::copy(Root(), std::getenv("TW_DEBUG_KEEP"), std::filesystem::copy_options::recursive);
  auto sp = Of(ev, "loss_spikes", "short_spikes");
  ASSERT_EQ(sp.size(), 1u);
  EXPECT_EQ(sp[0].severity, Severity::kWarning);
  for (const std::string run : {"short_swing_p4", "short_swing_p8"}) {
    SCOPED_TRACE(run);
    EXPECT_EQ(Of(ev, "loss_oscillation", run).size(), 1u);
  }
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Alarms(ev, "short_noisy_" + std::to_string(i)), std::vector<std::string>{});
}

// --- 6. A warmup that never ends ---------------------------------------------------------------

// detectron2: the LR still rising linearly at the last step; the TF2 Object Detection API: a
// warmup to 0.08 at step 1000, then 0.0799 to step 2000 of a planned 50000 (the cosine barely
// begun). YOLOv5's bias LR (x/lr0) starts near 0.1 and falls during its warmup, and its weight
// LR (x/lr2) rises and then decays: both healthy.
TEST_F(RealWorldTest, WarmupThatNeverEndsOnRealRuns) {
  REQUIRE_SICK_CORPUS();
  EngineOptions o;
  o.roles = {{"lr", "x/lr0", "*chaoyu1999*", "test"}, {"lr", "x/lr2", "*pugangqiang*", "test"}};
  Evaluation ev = Evaluate({sick + "/detectron2-torch-summarywriter", sick + "/tf2-od-api-tf-summary",
                            sick + "/yolov5-torch-summarywriter"}, o);
  auto d2 = Of(ev, "lr_schedule_misaligned", "Kevindic0214");
  ASSERT_EQ(d2.size(), 1u);
  EXPECT_EQ(d2[0].severity, Severity::kWarning);
  EXPECT_NE(d2[0].message.find("still rising at the end"), std::string::npos) << d2[0].message;
  auto od = Of(ev, "lr_schedule_misaligned", "my_ssd_mobnet");
  ASSERT_EQ(od.size(), 1u);
  EXPECT_EQ(od[0].severity, Severity::kWarning);
  EXPECT_NE(od[0].message.find("its decay barely begun"), std::string::npos) << od[0].message;
  EXPECT_TRUE(Of(ev, "lr_schedule_misaligned", "chaoyu1999").empty());
  EXPECT_TRUE(Of(ev, "lr_schedule_misaligned", "pugangqiang").empty());
  // detectron2 again: the warmup ends at iteration 999 of 1500 (a long warmup, the one finding)
  // and the 20x step drop comes at 1019, so the LR never stays at the peak it warmed up to
  // (min_peak_frac): a decay to a floor, judged by the time spent there (a third of the run; a
  // classic step schedule may spend that long at its last level, a decay may not): the other.
  auto kane = Of(ev, "lr_schedule_misaligned", "KaneLindsay");
  std::string said;
  for (const auto& f : kane) said += f.message + "\n";
  ASSERT_EQ(kane.size(), 2u) << said;
  EXPECT_NE(said.find("warms up until step 999"), std::string::npos) << said;
  EXPECT_NE(said.find("reached its floor 5e-05 at step 1019 (its last of 2 steps down from 0.000999) and has stayed "
                      "there for 32% of the run"),
            std::string::npos)
      << said;
}

// Generated: a warmup still rising at the end of a finished run (a warning); the same run still
// being written (every warmup looks like this while it runs: quiet); a warmup then a constant LR
// exactly at the peak (a deliberate constant-with-warmup: no warning), and the same with hparams
// planning a cosine decay (a warning).
TEST_F(RealWorldTest, WarmupThatNeverEndsWaitsForTheEndOfTheRun) {
  auto rising = [](int64_t t) { return 1e-3 * (t + 10) / 1010.0; };
  auto flat_peak = [](int64_t t) { return t < 500 ? 1e-3 * (t + 10) / 510.0 : 1e-3; };
  const Curve loss = [this](int64_t t) { return (0.3 + 2.0 * std::pow(1 + t / 100.0, -0.7)) * Noise(0.03); };
  WriteRun("rising", 1000, {{"loss", loss}, {"lr", rising, 10}});
  WriteRun("warmup_constant", 1000, {{"loss", loss}, {"lr", flat_peak, 10}});
  WriteRun("planned_cosine", 1000, {{"loss", loss}, {"lr", flat_peak, 10}},
           {testing::HParamsStartEvent(kT0, {{"lr_scheduler_type", std::string("cosine")}}, false)});
  Evaluation ev = Evaluate();
  EXPECT_EQ(Of(ev, "lr_schedule_misaligned", "rising").size(), 1u);
  EXPECT_EQ(Alarms(ev, "warmup_constant"), std::vector<std::string>{});
  auto planned = Of(ev, "lr_schedule_misaligned", "planned_cosine");
  ASSERT_EQ(planned.size(), 1u);
  EXPECT_NE(planned[0].message.find("lr_scheduler_type = cosine"), std::string::npos) << planned[0].message;

  // The same rising warmup, evaluated while the run is still writing: quiet.
  Result<std::unique_ptr<Engine>> engine = Engine::Open(Db(), {});
  ASSERT_TRUE(engine.ok());
  Result<Evaluation> live = (*engine)->Evaluate(nullptr, kT0 + 1000 * kDt + 5);
  ASSERT_TRUE(live.ok());
  EXPECT_TRUE(Of(*live, "lr_schedule_misaligned", "rising").empty());
}

// --- 7. Overfitting and stalls seen on a validation score --------------------------------------

// YOLOv5 chaoyu1999: mAP_0.5 peaks at 0.935 at epoch 29 and falls to 0.697 by 299 while the
// training losses keep falling: overfitting, best checkpoint 29. pugangqiang: mAP_0.5 climbs to
// 0.99 and stays there (saturated: success, neither overfitting nor a stall).
TEST_F(RealWorldTest, OverfittingOnAValidationScoreOnRealRuns) {
  REQUIRE_SICK_CORPUS();
  EngineOptions o;
  o.roles = {{"train_loss", "train/obj_loss", "", "test"}, {"val_metric", "metrics/mAP_0.5", "", "test"}};
  Evaluation ev = Evaluate({sick + "/yolov5-torch-summarywriter"}, o);
  // The mAP (and, with roles inferred, its validation class loss too: both overfit).
  auto of = Of(ev, "overfitting", "chaoyu1999");
  auto map = std::find_if(of.begin(), of.end(), [](const Observation& o) { return o.series == "metrics/mAP_0.5"; });
  ASSERT_NE(map, of.end());
  EXPECT_EQ(map->onset_step, 29);
  EXPECT_NE(map->message.find("higher is better"), std::string::npos) << map->message;
  EXPECT_TRUE(Of(ev, "overfitting", "pugangqiang").empty());
  for (const auto& o : Of(ev, "val_stall", "pugangqiang"))  // the saturated mAP is success
    EXPECT_NE(o.series, "metrics/mAP_0.5") << o.message;
  EXPECT_EQ(Alarms(ev, "pugangqiang"), std::vector<std::string>{});
}

// Generated: a validation accuracy that peaks and falls while training loss falls (overfitting);
// a validation F1 that stops improving (a stall, information); an accuracy at 1.0 (saturated).
TEST_F(RealWorldTest, ValidationScoresAreReadHigherIsBetter) {
  const Curve loss = [this](int64_t t) { return (0.05 + 2.0 * std::pow(1 + t / 100.0, -0.8)) * Noise(0.03); };
  WriteRun("acc_falls", 4000, {{"train_loss", loss},
                               {"val_acc", [this](int64_t t) {
                                  return (t < 1500 ? 0.5 + 0.35 * t / 1500.0 : 0.85 - 0.15 * (t - 1500) / 2500.0) * Noise(0.003);
                                }, 100}});
  WriteRun("f1_stalls", 4000, {{"train_loss", loss},
                               {"eval/f1", [this](int64_t t) { return std::min(0.7, 0.3 + 0.4 * t / 1500.0) * Noise(0.002); }, 100}});
  WriteRun("acc_saturated", 4000, {{"train_loss", loss},
                                   {"val_acc", [](int64_t t) { return std::min(1.0, 0.5 + 0.5 * t / 1000.0); }, 100}});
  Evaluation ev = Evaluate();
  auto of = Of(ev, "overfitting", "acc_falls");
  ASSERT_EQ(of.size(), 1u);
  EXPECT_NEAR(static_cast<double>(*of[0].onset_step), 1500, 200);
  auto st = Of(ev, "val_stall", "f1_stalls");
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].severity, Severity::kInfo);
  EXPECT_NEAR(static_cast<double>(*st[0].onset_step), 1500, 300);
  EXPECT_TRUE(Of(ev, "overfitting", "f1_stalls").empty());
  EXPECT_TRUE(Of(ev, "val_stall", "acc_saturated").empty());
  EXPECT_TRUE(Of(ev, "overfitting", "acc_saturated").empty());
}

// --- Roles inferred on real runs, with no pattern naming their tags -----------------------------

// W&B keys with a trailing space ('Training loss ') are read by their words: the NaN from the
// first step is found. A GAN's discriminator loss, which rises towards its equilibrium, is no
// training loss: no divergence. Ultralytics writes each validation value 11 times per step
// (its callback registered once per sibling file): one evaluation, not three identical ones.
TEST_F(RealWorldTest, InferredRolesOnRealRuns) {
  REQUIRE_SICK_CORPUS();
  Evaluation ev = Evaluate({sick + "/wandb-0.16-python", sick + "/wandb-0.17-python",
                            sick + "/ultralytics-yolov8-torch-summarywriter"});
  auto nan = Of(ev, "non_finite_loss", "0gkgcqjt");
  ASSERT_FALSE(nan.empty());
  EXPECT_EQ(nan[0].onset_step, 0);
  EXPECT_TRUE(Of(ev, "loss_divergence", "gan_noise").empty());
  EXPECT_TRUE(Of(ev, "val_constant", "train13").empty());
}

}  // namespace
}  // namespace tw::diagnose

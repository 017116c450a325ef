// The "stuck" rules (loss_plateau, loss_at_chance) and loss_oscillation on real runs: the CPU
// runs trained for real with a known cause (tests/data/cpu_runs, labels.json) and the public
// sick corpus (../shared/corpus-sick, PATHOLOGIES.md; skipped, loudly, when absent). What each
// test pins is a mechanism, not a file: convergence with diminishing returns is no plateau; a
// stay at chance is read from where the loss last did better than chance; minibatch noise is
// not oscillation (successive values independent), a cyclic LR's swings on a descent are; a
// validation loss that jumps up and down between evaluations swings.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "diagnose/engine.h"
#include "support/diagnose_fixture.h"
#include "support/test_env.h"

namespace tw::diagnose {
namespace {

using testing::Tag;

class RealStuckTest : public testing::RealRunsFixture {
 protected:
  // Default: every CPU run (a run's name is its path under the directory ingested).
  Evaluation Evaluate(const std::vector<std::string>& paths = {TW_CPU_RUNS_DIR}) {
    return RealRunsFixture::Evaluate(paths);
  }
};

// --- loss_plateau: convergence is not a plateau ------------------------------------------------

// Three healthy runs that fall fast and then flatten with diminishing returns: InfoNCE
// (2.30 -> 0.89, the drop made in its first steps, so the trend line alone put its "initial
// level" at 1.09 and called an 18% drop "not moved"), a regression at its noise floor (18.2 ->
// 1.0) and a transformer at its data's entropy (3.15 -> 1.1). Against them, the plateaus the
// labels want: a transformer wrecked by no warmup (2.9 -> 2.5, then flat: a knee, not a
// deceleration), and nets flat from the start (dead init, shuffled labels), whose plateau begins
// at the first step.
TEST_F(RealStuckTest, ConvergenceIsNoPlateauButAKneeIs) {
  Evaluation ev = Evaluate();
  for (const char* healthy : {"healthy_contrastive_infonce", "healthy_converged_long_flat", "healthy_transformer_warmup"})
    for (const auto& o : Of(ev, "loss_plateau", healthy)) ADD_FAILURE() << healthy << ": " << o.message;
  auto knee = Of(ev, "loss_plateau", "transformer_no_warmup");
  ASSERT_EQ(knee.size(), 1u);
  EXPECT_NE(knee[0].message.find("after dropping"), std::string::npos) << knee[0].message;
  for (const auto& [run, start] : {std::pair{"dead_relu_zero_init", 2}, std::pair{"shuffled_labels_mlp", 4}}) {
    auto flat = Of(ev, "loss_plateau", run);
    ASSERT_EQ(flat.size(), 1u) << run;
    EXPECT_EQ(flat[0].onset_step, start) << flat[0].message;
    EXPECT_NE(flat[0].message.find("near its initial level"), std::string::npos) << flat[0].message;
  }
}

// --- loss_at_chance: where the stay began, and what counts as long -----------------------------

// SGD at lr 0.8 learns for 9 steps (2.28 -> 0.91), blows up (33 at step 12) and kills its
// ReLUs: from there the loss bounces at 2.3-2.5 (ln 10 = 2.303), val_acc 0.09-0.11. The stay
// at chance begins where the loss last did better than chance, not at the run's start.
TEST_F(RealStuckTest, LossCameBackToChanceAfterABlowUp) {
  Evaluation ev = Evaluate();
  auto at = Of(ev, "loss_at_chance", "cnn_sgd_lr_blowup");
  ASSERT_EQ(at.size(), 1u);
  EXPECT_GE(at[0].onset_step, 9);
  EXPECT_LE(at[0].onset_step, 24) << at[0].message;
  EXPECT_NE(at[0].message.find("came back to chance"), std::string::npos) << at[0].message;
}

// Short runs at chance from the first step, each long by another measure than 1,000 steps:
// three or four evaluations at chance (a 12-layer sigmoid net whose val accuracy sits at the
// majority share 0.14-0.15, flat: no learning; an MSE on one-hot targets at (K-1)/K^2 = 0.09),
// or a Keras run whose epoch_loss steps are epochs (12 of them; its train accuracy rises to
// 0.17 by memorising shuffled labels while the validation accuracy stays at 0.1). And an
// S-curve that sat at ln 2 for 40% of the run and then learned stays quiet.
TEST_F(RealStuckTest, ShortRunsAtChanceAndAnSCurve) {
  Evaluation ev = Evaluate();
  auto sigmoid = Of(ev, "loss_at_chance", "deep_sigmoid_vanishing");
  ASSERT_EQ(sigmoid.size(), 1u);
  EXPECT_EQ(sigmoid[0].onset_step, 4);
  EXPECT_NE(sigmoid[0].message.find("3 evaluations"), std::string::npos) << sigmoid[0].message;
  auto mse = Of(ev, "loss_at_chance", "mse_onehot_shuffled");
  ASSERT_EQ(mse.size(), 1u);
  EXPECT_NE(mse[0].message.find("(K-1)/K^2 for K = 10"), std::string::npos) << mse[0].message;
  auto keras = Of(ev, "loss_at_chance", "shuffled_labels_cnn_keras/train");
  ASSERT_EQ(keras.size(), 1u);
  EXPECT_EQ(keras[0].onset_step, 0);
  EXPECT_NE(keras[0].message.find("11 epochs"), std::string::npos) << keras[0].message;
  EXPECT_TRUE(Of(ev, "loss_at_chance", "healthy_sparse_parity_s_curve").empty());
  EXPECT_TRUE(Of(ev, "loss_plateau", "healthy_sparse_parity_s_curve").empty());
}

// --- loss_oscillation: noise is not swinging ---------------------------------------------------

// Batch 8 with SGD momentum: single points 0.10-2.88, a 5-point median still spans 2.3x and
// crosses its level 78 times, but successive losses are independent samples. The same for a
// real SFT run logging each single-batch loss (PATHOLOGIES.md: noise, not spikes).
TEST_F(RealStuckTest, MinibatchNoiseIsNotOscillation) {
  Evaluation ev = Evaluate();
  for (const auto& o : Of(ev, "loss_oscillation", "healthy_small_batch_noisy")) ADD_FAILURE() << o.message;
}

TEST_F(RealStuckTest, SingleBatchSftLossIsNotOscillation) {
  REQUIRE_SICK_CORPUS();
  Evaluation ev = Evaluate({sick + "/wandb-core-0.21/1BIMU__UASFT"});
  for (const auto& o : Of(ev, "loss_oscillation", "42la265j")) ADD_FAILURE() << o.message;
}

// A cyclic LR (base 0.05, max 3.0, 8 logged points a cycle) past the edge of stability: the
// full-batch loss jumps 2-5x at every LR peak while it trends down 2.32 -> 0.025. The period
// is clear (its autocorrelation far beyond chance) and the swings around the trend are wide.
// Evaluated a second after the last point: the run's silence afterwards is stale_run's to
// judge, and would mute this.
TEST_F(RealStuckTest, CyclicLrSwingsOnADescent) {
  Ingest({TW_CPU_RUNS_DIR});
  Result<std::unique_ptr<Engine>> engine = Engine::Open(Db(), {});
  ASSERT_TRUE(engine.ok());
  Result<store::Stmt> last = (*engine)->db().Prepare(
      "SELECT max(wall_time) FROM scalars JOIN series USING (series_id) JOIN runs USING (run_id) "
      "WHERE runs.name = 'cyclic_lr_oscillation'");
  ASSERT_TRUE(last.ok() && *last->Step());
  const double now = last->Real(0) + 1;
  engine->reset();
  Evaluation ev = EvaluateStore({}, now);
  auto osc = Of(ev, "loss_oscillation", "cyclic_lr_oscillation");
  ASSERT_EQ(osc.size(), 1u);
  EXPECT_NE(osc[0].message.find("around its downward trend"), std::string::npos) << osc[0].message;
  EXPECT_LE(osc[0].onset_step, 60) << osc[0].message;
}

// A long, smooth Lightning curve (240 epoch points, step-decayed SGD): its differences are
// positively autocorrelated at every short lag (0.27 at lag 2, beyond chance over 240 points),
// but it never turns around within that "period": smoothness, not a swing.
TEST_F(RealStuckTest, SmoothCurveHasNoShortPeriod) {
  REQUIRE_DIR(corpus, testing::CorpusDir());
  Ingest({corpus + "/pytorch-lightning-2.x/EnderXiao__SATD"});
  Evaluation ev = EvaluateStore({}, 4e9);
  for (const auto& o : Of(ev, "loss_oscillation", "version_0")) ADD_FAILURE() << o.message;
}

// A YOLO run validating on ~4 instances: val/cls_loss 10.8, 7.9, 55.6, 11.4, 23.8, 3.7, 4.2,
// 16.3, 3.1, 2.9 while the training loss falls smoothly. Healthy and overfitting YOLO runs,
// whose validation losses fall (or rise) with a trend, stay quiet.
TEST_F(RealStuckTest, ValidationLossSwingsBetweenEvaluations) {
  REQUIRE_SICK_CORPUS();
  // Evaluated long after (history: stale_run, which would mute this, has nothing to say).
  Ingest({sick + "/ultralytics-yolov8-torch-summarywriter", sick + "/yolov5-torch-summarywriter"});
  Evaluation ev = EvaluateStore({}, 4e9);
  auto osc = Of(ev, "loss_oscillation", "train8");
  ASSERT_EQ(osc.size(), 1u) << ::testing::PrintToString(DiagnoseFixture::Alarms(ev, "train8", true));
  EXPECT_NE(osc[0].message.find("(validation)"), std::string::npos) << osc[0].message;
  for (const char* quiet : {"train13", "Chess_detection", "FPSAutomaticAiming"})
    for (const auto& o : Of(ev, "loss_oscillation", quiet)) ADD_FAILURE() << quiet << ": " << o.message;
}

// Generated trap and its twin: a flat loss with 60% per-step (log) noise (a 5-point median spans more
// than 2x and crosses its level all the time) stays quiet; the same level swinging with a
// period of 40 steps under the same noise fires.
TEST_F(RealStuckTest, GeneratedNoiseQuietSwingFires) {
  std::mt19937 rng(11);
  std::vector<double> noise(2000);
  for (double& x : noise) x = std::exp(std::normal_distribution<double>(0, 0.6)(rng));
  WriteRun("noise", 2000, {{"train/loss", [&](int64_t s) { return 0.9 * noise[static_cast<size_t>(s)]; }}});
  WriteRun("swing", 2000, {{"train/loss", [&](int64_t s) {
             return 0.9 * std::exp(0.6 * std::sin(2 * M_PI * static_cast<double>(s) / 40)) * noise[static_cast<size_t>(s)];
           }}});
  Evaluation ev = Evaluate({Root()});
  for (const auto& o : Of(ev, "loss_oscillation", "noise")) ADD_FAILURE() << o.message;
  EXPECT_EQ(Of(ev, "loss_oscillation", "swing").size(), 1u);
}

}  // namespace
}  // namespace tw::diagnose

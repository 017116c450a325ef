// loss_divergence and loss_spikes on real runs they once missed, each for a reason that is a
// class of its own: a run of 20 epochs (too short for the default windows), a loss that is worst
// from its first steps (its best is before the first full window), a loss that is not positive
// (an RL objective, an energy), a blow-up that came back, and spikes in a validation loss or on a
// run that also diverges. Real runs from ../shared/corpus-sick and ../shared/corpus (skipped,
// loudly, when absent) and the CPU runs (tests/data/cpu_runs); generated curves pin the edges
// that must stay quiet.
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

class RealDivergenceTest : public testing::RealRunsFixture {
 protected:
  RealDivergenceTest() { rng_.seed(11); }

  // Whether `rule` fired at warning or worse on `run`.
  static bool Loud(const Evaluation& ev, const std::string& rule, const std::string& run) {
    for (const auto& o : Of(ev, rule, run))
      if (o.severity >= Severity::kWarning) return true;
    return false;
  }
};

// --- loss_divergence ---------------------------------------------------------------------------

// A 20-epoch run (W&B, one point every other _step) whose training loss is lowest at its first
// point: 0.49 @0, 0.62 @10, 1.08 @12, 1.78 @14, about 1.6-2 from then on (accuracy 0.83 -> 0.36).
// Its window is a quarter of its points (5), not 25, and it is judged from 16 points on.
TEST_F(RealDivergenceTest, TwentyEpochRunWorstSinceItsStartDiverges) {
  REQUIRE_SICK_CORPUS();
  Evaluation ev = Evaluate({sick + "/wandb-0.16-python"});
  auto d = Of(ev, "loss_divergence", "kosd8wn6");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, Severity::kCritical);
  ASSERT_TRUE(d[0].onset_step.has_value());
  EXPECT_LE(*d[0].onset_step, 12);
  EXPECT_NE(d[0].message.find("smoothed over 5 points"), std::string::npos) << d[0].message;
  // The spike on top of it (9.68 @34 against about 1.6 on both sides) is reported too: divergence
  // no longer mutes spikes; one spike in a 20-epoch run is information.
  auto s = Of(ev, "loss_spikes", "kosd8wn6");
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s[0].onset_step, 34);
  // Its sibling runs: NaN from epoch 7 (a6zwz7v8) and NaN throughout (0gkgcqjt) are
  // non_finite_loss, which mutes both.
  EXPECT_TRUE(Of(ev, "loss_divergence", "a6zwz7v8").empty());
  EXPECT_TRUE(Of(ev, "loss_spikes", "0gkgcqjt").empty());
}

// SGD at lr 5 on a tanh MLP: 2.30 @1, 2.25 @2, 8.8 @3, 65 @5, then 56-160 to the end (192
// steps). The loss left its start within the first smoothing window: the best is the median of
// its first three points, not the first full window's (79 at step 25, against which the rest is
// only 1.4x).
TEST_F(RealDivergenceTest, DivergenceInTheFirstStepsHasItsBestAtTheStart) {
  Evaluation ev = Evaluate({CpuRuns()});
  auto d = Of(ev, "loss_divergence", "sgd_tanh_divergence");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, Severity::kCritical);
  ASSERT_TRUE(d[0].onset_step.has_value());
  EXPECT_LE(*d[0].onset_step, 5);
}

// An energy-based model without a regulariser: 0.16 @2, -11 @70, -1.5e4 @116, -5e21 @125. The
// dive speeds up, so its deepest point is the last one, far below the median of the last three:
// "not come back" is read on the latest point. The onset is where it went below 100x its early
// size for good (step 70; labelled 74), not where it first went negative.
TEST_F(RealDivergenceTest, AcceleratingDiveBelowZeroDiverges) {
  Evaluation ev = Evaluate({CpuRuns()});
  auto d = Of(ev, "loss_divergence", "energy_unbounded");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, Severity::kCritical);
  ASSERT_TRUE(d[0].onset_step.has_value());
  EXPECT_NEAR(static_cast<double>(*d[0].onset_step), 74, 0.05 * 123);
  EXPECT_NE(d[0].message.find("dived below zero"), std::string::npos) << d[0].message;
  // The same model with an energy penalty settles at a bounded negative value: quiet.
  EXPECT_TRUE(Of(ev, "loss_divergence", "healthy_energy_regularized").empty());
  EXPECT_TRUE(Alarms(ev, "healthy_energy_regularized").empty());
}

// An RL loss about -12 for 56 episodes that climbs to +163 (last tenth about +51): no log scale,
// so its rise is read in units of its size (12): 4-5x its size, a steady climb.
TEST_F(RealDivergenceTest, LossThatIsNotPositiveDivergesByItsSize) {
  REQUIRE_DIR(corpus, testing::CorpusDir());
  Evaluation ev = Evaluate({corpus + "/wandb-legacy-0.8/AGKhalil__RL_implements"});
  auto d = Of(ev, "loss_divergence", "z4nv4p4v");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, Severity::kCritical);
  EXPECT_NE(d[0].message.find("its size"), std::string::npos) << d[0].message;
  // Its spikes (+3 @21 and +6.5 @58 against about -12) are read on the same linear scale.
  auto s = Of(ev, "loss_spikes", "z4nv4p4v");
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s[0].onset_step, 21);
  // The same author's other run (1egzk2xs) does not diverge.
  EXPECT_TRUE(Of(ev, "loss_divergence", "1egzk2xs").empty());
}

// TF1 Estimator, 20 points: 20.4 @401, 609 @501, 26458 @601, 5734 @701, ... 3.9 @1201, 8e-8 @1901.
// The blow-up came back, so the run is not diverging now, but its smoothed level rose 20x above
// its best so far and took until step 1201 to come back: a warning (transient), and the spike.
TEST_F(RealDivergenceTest, BlowUpThatCameBackIsATransientDivergence) {
  REQUIRE_DIR(corpus, testing::CorpusDir());
  Evaluation ev = Evaluate({corpus + "/tf1-estimator"});
  auto d = Of(ev, "loss_divergence", "YHGui");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity, Severity::kWarning);
  EXPECT_NE(d[0].message.find("blew up"), std::string::npos) << d[0].message;
  ASSERT_TRUE(d[0].onset_step.has_value());
  // The onset is the last point at that best (the rolling median is 92 at 401 and at 501).
  EXPECT_EQ(*d[0].onset_step, 501);
  auto s = Of(ev, "loss_spikes", "YHGui");
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s[0].severity, Severity::kWarning);  // 26458 did not come back within 2 points
}

// Generated: a loss that jumps 40x (an LR schedule bug: 0.05 -> 3 at one epoch) and then stays
// flat up there has no trend since its best (the smoothed best lags the jump), yet an order of
// magnitude above the best, held, is a divergence: critical, in a 20-epoch run and in a 600-step
// one. A jump of 2x that stays is a spike that did not recover (loss_spikes), not this.
TEST_F(RealDivergenceTest, OrderOfMagnitudeJumpThatStaysIsADivergence) {
  auto jump = [this](double factor, int64_t at) {
    return [this, factor, at](int64_t t) { return (0.2 + 0.4 * std::exp(-t / 2.0)) * (t >= at ? factor : 1.0) * Noise(0.1); };
  };
  WriteRun("jump40_epochs", 20, {{"train/loss", jump(40, 6)}});
  WriteRun("jump40_steps", 600, {{"train/loss", jump(40, 200)}});
  WriteRun("jump2_steps", 600, {{"train/loss", jump(2, 200)}});
  Evaluation ev = Evaluate();
  for (const char* run : {"jump40_epochs", "jump40_steps"}) {
    auto d = Of(ev, "loss_divergence", run);
    ASSERT_EQ(d.size(), 1u) << run;
    EXPECT_EQ(d[0].severity, Severity::kCritical) << run;
    EXPECT_NE(d[0].message.find("has stayed up"), std::string::npos) << d[0].message;
  }
  EXPECT_TRUE(Of(ev, "loss_divergence", "jump2_steps").empty());
}

// Traps of the corpus stay quiet: a maximised ELBO rising through zero by 1e6 (beta-tcvae), YOLO
// warmups (a train box loss rising, an early val/obj spike), a 429 first loss and a loss whose
// definition changes mid-run (ADIOCLASSMATE), per-step SFT noise with isolated 5x points (1BIMU),
// duplicated YOLOv8 values (AlanYuzhe).
TEST_F(RealDivergenceTest, CorpusTrapsStayQuiet) {
  REQUIRE_SICK_CORPUS();
  Evaluation ev = Evaluate({sick});
  for (const char* run : {"n748obmj", "pugangqiang", "chaoyu1999", "h48i8h28", "sxn3hk1y", "42la265j",
                          "train13", "8ymxhcfn", "nt1k6dl7", "jmy8a387", "8ojozwo6"})
    EXPECT_FALSE(Loud(ev, "loss_divergence", run) || Loud(ev, "loss_spikes", run)) << run;
  for (const char* run : {"n748obmj", "h48i8h28", "42la265j", "8ojozwo6"})
    EXPECT_TRUE(Of(ev, "loss_divergence", run).empty()) << run;
}

// Generated: a loss that is not positive, flat about -12 for 60 % of the run and then climbing to
// +40, diverges, with the onset where the climb began; the same climb from the first step (a
// maximised objective's shape: a reward or an ELBO read as a loss, no sign to say which way is
// better) does not.
TEST_F(RealDivergenceTest, NotPositiveLossMustTurnUpAfterAStableStretch) {
  auto climb = [](double x) { return -12.0 + 52.0 * x; };  // the onset is a linear hinge's
  WriteRun("turns_up", 200, {{"train/loss", [&](int64_t t) {
                                return (t < 120 ? -12.0 : climb((t - 120) / 80.0)) + std::log(Noise(0.5));
                              }}});
  WriteRun("rises_from_start", 200, {{"train/loss", [&](int64_t t) {
                                        return -12.0 + 52.0 * (1 - std::exp(-t / 30.0)) + std::log(Noise(0.5));
                                      }}});
  Evaluation ev = Evaluate();
  auto d = Of(ev, "loss_divergence", "turns_up");
  ASSERT_EQ(d.size(), 1u);
  ASSERT_TRUE(d[0].onset_step.has_value());
  EXPECT_NEAR(static_cast<double>(*d[0].onset_step), 120, 0.05 * 200);
  EXPECT_TRUE(Of(ev, "loss_divergence", "rises_from_start").empty());
}

// --- loss_spikes ---------------------------------------------------------------------------------

// 21 evaluations of a language model: 429.5 @0 (an init artefact), then 3.81 falling steadily to
// 2.33 @12000, 3.63 @13000, 2.46 @14000, 2.23 at the end. Against a trailing window the jump is
// small (the window holds the descent); against both sides, in units of the curve's own
// point-to-point noise (0.5%), it is 1.5x and some 90 noise SDs. One spike in a validation loss
// is the model knocked off course: information.
TEST_F(RealDivergenceTest, SpikeInAValidationLossIsRead) {
  REQUIRE_SICK_CORPUS();
  Evaluation ev = Evaluate({sick + "/wandb-core-0.25/ADIOCLASSMATE__Bag-of-tricks-for-Transformers"});
  auto s = Of(ev, "loss_spikes", "sxn3hk1y");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].series, "val/loss");
  EXPECT_EQ(s[0].severity, Severity::kInfo);
  EXPECT_EQ(s[0].onset_step, 13000);
  // The baseline run of the same project (first loss 429, then a steady fall): nothing.
  EXPECT_TRUE(Of(ev, "loss_spikes", "h48i8h28").empty());
}

// A GAN (800 steps): D Loss 0.3 @44, 10.6 @45, 0.0023 @46 (D(x) 0.999 after: the discriminator
// took over), G Loss to its run maximum 6.69 @46. The players' losses get a role of their own
// (gan_loss: no loss the run drives down, so divergence and plateau never read them; the
// discriminator's rises towards 2 ln 2 as the generator improves) that loss_spikes reads against
// both sides, where one spike is information.
TEST_F(RealDivergenceTest, SpikeInAGanPlayersLossIsRead) {
  REQUIRE_SICK_CORPUS();
  Evaluation ev = Evaluate({sick + "/wandb-0.17-python"});
  auto s = Of(ev, "loss_spikes", "bjoekywl");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].series, "D Loss");
  EXPECT_EQ(s[0].severity, Severity::kInfo);
  EXPECT_EQ(s[0].onset_step, 45);
  EXPECT_NE(s[0].message.find("GAN"), std::string::npos) << s[0].message;
  EXPECT_TRUE(Alarms(ev, "bjoekywl").empty());
}

// A 40-step regression run where every 7th batch comes from an unscaled shard: spikes of 40-400x
// from step 7 on. The both-sides reading finds the first one (the trailing window of 10 points
// needed until step 14).
TEST_F(RealDivergenceTest, ShortRunSpikesFromTheFirstOne) {
  Evaluation ev = Evaluate({CpuRuns()});
  auto s = Of(ev, "loss_spikes", "bad_batch_spikes_short");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].onset_step, 7);
  EXPECT_EQ(s[0].severity, Severity::kWarning);  // five of them: recurring
  EXPECT_TRUE(Of(ev, "loss_divergence", "bad_batch_spikes_short").empty());
}

// Healthy CPU runs stay quiet for both rules, whatever their length (Keras runs of 12-15 epochs
// with a steep first drop, 8-point validation losses that fall 30x, noisy small batches).
TEST_F(RealDivergenceTest, HealthyCpuRunsStayQuiet) {
  const std::vector<std::string> healthy = {
      "healthy_cnn_keras",        "healthy_cnn_lightning",      "healthy_contrastive_infonce",
      "healthy_converged_long_flat", "healthy_gru_clipped",     "healthy_hf_mlp_eval",
      "healthy_keras_mlp_constant", "healthy_mlp_custom_names", "healthy_mlp_warmup_cosine",
      "healthy_rnn_with_counters", "healthy_small_batch_noisy", "healthy_sparse_parity_s_curve",
      "healthy_transformer_warmup"};
  Evaluation ev = Evaluate({CpuRuns()});
  for (const auto& h : healthy) {
    EXPECT_TRUE(Of(ev, "loss_divergence", h).empty()) << h;
    EXPECT_TRUE(Of(ev, "loss_spikes", h).empty()) << h;
  }
}

// Generated edges: a 20-epoch curve that falls steeply and then noisily flattens (each point
// below the one before, 5% noise) has no spike and no divergence; the same curve with one
// epoch at 4x has its spike, and with the loss doubling from epoch 10 on it diverges (a short
// run judged from 16 points); a 12-epoch run is too short for divergence.
TEST_F(RealDivergenceTest, ShortGeneratedEdges) {
  auto fall = [this](int64_t t) { return (0.3 + 2.0 * std::exp(-t / 3.0)) * Noise(0.05); };
  WriteRun("quiet_fall", 20, {{"train/loss", fall}, {"val/loss", fall}});
  WriteRun("fall_spike", 20, {{"train/loss", [&](int64_t t) { return fall(t) * (t == 14 ? 4.0 : 1.0); }}});
  WriteRun("fall_rise", 20, {{"train/loss", [&](int64_t t) { return fall(t) * (t >= 10 ? std::pow(1.25, t - 9.0) : 1.0); }}});
  WriteRun("too_short", 12, {{"train/loss", [&](int64_t t) { return 0.5 * std::pow(1.3, t) * Noise(0.05); }}});
  Evaluation ev = Evaluate();
  EXPECT_TRUE(Of(ev, "loss_spikes", "quiet_fall").empty());
  EXPECT_TRUE(Of(ev, "loss_divergence", "quiet_fall").empty());
  auto s = Of(ev, "loss_spikes", "fall_spike");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].onset_step, 14);
  EXPECT_TRUE(Of(ev, "loss_divergence", "fall_spike").empty());
  EXPECT_EQ(Of(ev, "loss_divergence", "fall_rise").size(), 1u);
  EXPECT_TRUE(Of(ev, "loss_divergence", "too_short").empty());
}

}  // namespace
}  // namespace tw::diagnose

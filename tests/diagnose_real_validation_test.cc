// The validation family (overfitting, val_stall, val_constant), gradient explosions and step
// schedules on real runs: public sick runs from ../shared/corpus-sick (PATHOLOGIES.md; skipped,
// loudly, when absent), runs trained on a CPU with known causes (tests/data/cpu_runs) and GPU
// runs (tests/data/real_runs); generated curves only to pin a trap no file shows.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "diagnose/engine.h"
#include "support/diagnose_fixture.h"
#include "support/test_env.h"

namespace tw::diagnose {
namespace {

class RealValidationTest : public testing::RealRunsFixture {};

// --- overfitting: one evaluation per step, and the score decides ------------------------------

// YOLOv8 train13 (healthy): val/cls_loss 0.561 at epoch 89 -> 0.62 at 100 while mAP50 stays at
// 0.93-0.95 (its best 0.954 at 76); every value is written 11 times per epoch. Read once per
// epoch, the rise is within the loss's own noise; and the score holds. YOLOv5 chaoyu1999 overfits
// for real: mAP_0.5 0.935 at epoch 29 -> 0.697.
TEST_F(RealValidationTest, OverfittingOnYoloRunsIsJudgedOncePerEpochAndByTheScore) {
  REQUIRE_SICK_CORPUS();
  Evaluation ev = Evaluate({sick + "/ultralytics-yolov8-torch-summarywriter", sick + "/yolov5-torch-summarywriter"});
  // Read 11 times per epoch, the rise looked significant (no noise between the copies) and
  // only the holding score kept it from a warning; read once, there is nothing to report.
  for (const auto& o : Of(ev, "overfitting", "train13")) ADD_FAILURE() << o.message;
  EXPECT_TRUE(testing::DiagnoseFixture::Alarms(ev, "train13", true).empty());
  auto map = On(ev, "overfitting", "chaoyu1999", "metrics/mAP_0.5");
  ASSERT_EQ(map.size(), 1u);
  EXPECT_EQ(map[0].severity, Severity::kWarning);
  EXPECT_NEAR(static_cast<double>(*map[0].onset_step), 29, 2);
}

// Keras CNN on 128 noisy images: validation loss 1.633 (epoch 8) -> 2.813 while validation
// accuracy holds near 0.60 (best 0.629). The loss is above its first evaluation (2.298): it gave
// back 177% of what it gained, confidently wrong predictions, a warning although the score
// holds. With the give-back bar above that, the same rise is read as calibration: information
// that names the score that held.
TEST_F(RealValidationTest, AHoldingScoreTurnsAMildLossRiseIntoACalibrationNote) {
  auto warn = Of(Evaluate({CpuRuns()}), "overfitting", "overfit_keras_cnn/train");
  ASSERT_EQ(warn.size(), 1u);
  EXPECT_EQ(warn[0].series, "epoch_loss");
  EXPECT_EQ(warn[0].severity, Severity::kWarning);
  EXPECT_EQ(warn[0].onset_step, 8);

  EngineOptions lenient;
  lenient.params["overfitting"]["giveback"] = 2.0;
  auto note = Of(EvaluateStore(lenient, std::nullopt), "overfitting", "overfit_keras_cnn/train");
  ASSERT_EQ(note.size(), 1u);
  EXPECT_EQ(note[0].severity, Severity::kInfo);
  EXPECT_NE(note[0].message.find("epoch_accuracy held"), std::string::npos) << note[0].message;
  EXPECT_NE(note[0].message.find("overconfident"), std::string::npos) << note[0].message;
}

// The labelled overfitting runs stay warnings: a loss and a flat accuracy (64 samples), a
// falling mIoU alone, and the GPU runs.
TEST_F(RealValidationTest, RealOverfittingStaysAWarning) {
  Evaluation ev = Evaluate({CpuRuns(), TW_REAL_RUNS_DIR});
  for (const std::string run : {"overfit_64_samples", "overfit_miou_segmentation", "torch_overfit"}) {
    bool warned = false;
    for (const auto& o : Of(ev, "overfitting", run)) warned |= o.severity == Severity::kWarning;
    EXPECT_TRUE(warned) << run;
  }
  auto loss = On(ev, "overfitting", "overfit_64_samples", "Loss/val");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_EQ(loss[0].onset_step, 12);
}

// --- val_constant on scores ---------------------------------------------------------------------

// val_acc 0.109 at all 10 (and 20) epochs of a network at chance (the majority share), an AUC of
// exactly 0.5 at all 4 evaluations, and a zero-initialised MLP predicting one class (0.1504 at
// every evaluation). A score that moved and then repeated (0.9375 once the LR hit 1e-7) is a
// quantised score of a converged model, not a frozen evaluation.
TEST_F(RealValidationTest, ValConstantOnAScoreThatNeverMoved) {
  REQUIRE_SICK_CORPUS();
  Evaluation ev = Evaluate({sick + "/wandb-core-0.25/ashishmeshram229__DA6401-Assignment-1/wandb",
                            sick + "/wandb-legacy-0.8/MoonBlvd__mil_ucf_cvpr2018/wandb", CpuRuns()});
  for (const std::string run : {"xf4an76b", "0i72n3dd"}) {
    auto acc = On(ev, "val_constant", run, "val_acc");
    ASSERT_EQ(acc.size(), 1u) << run;
    EXPECT_EQ(acc[0].severity, Severity::kWarning);
    EXPECT_EQ(acc[0].onset_step, 0);
    EXPECT_NE(acc[0].message.find("exactly 0.109"), std::string::npos) << acc[0].message;
  }
  auto auc = On(ev, "val_constant", "k1zry8jk", "auc");
  ASSERT_EQ(auc.size(), 1u);
  EXPECT_NE(auc[0].message.find("chance for an AUC"), std::string::npos) << auc[0].message;
  EXPECT_EQ(On(ev, "val_constant", "dead_relu_zero_init", "val_acc").size(), 1u);
  EXPECT_TRUE(On(ev, "val_constant", "multistep_floor_early_lightning", "val_acc").empty());
  EXPECT_TRUE(Of(ev, "val_constant", "8ojozwo6").empty());  // healthy twin
}

// A Keras test asset whose epoch_val_acc is exactly 1 at all 17 epochs: a solved task, not a
// frozen evaluation.
TEST_F(RealValidationTest, ValConstantLeavesASaturatedScoreAlone) {
  REQUIRE_DIR(corpus, testing::CorpusDir());
  Evaluation ev = Evaluate({corpus + "/keras-2-tf1-callback/wandb__wandb/tests"});
  bool seen = false;
  for (const auto& v : ev.verdicts) seen |= v.run.find("assets") != std::string::npos;
  ASSERT_TRUE(seen);
  EXPECT_TRUE(Of(ev, "val_constant", "assets").empty());
}

// --- val_stall on a fast run --------------------------------------------------------------------

// An HF run on a CPU logs only eval/f1: 0.253 at step 64, then 0.251-0.253 at every evaluation
// to step 400 (22 seconds of wall time) while train/loss falls to 2e-4. The stall covers 84% of
// the run. A converged regression (its training loss flat at the noise floor too) is not one.
TEST_F(RealValidationTest, ValStallCountsTheRunsProgressAndNeedsTrainingToImprove) {
  Evaluation ev = Evaluate({CpuRuns()});
  auto f1 = On(ev, "val_stall", "overfit_val_f1_only", "eval/f1");
  ASSERT_EQ(f1.size(), 1u);
  EXPECT_EQ(f1[0].onset_step, 64);
  EXPECT_TRUE(Of(ev, "val_stall", "healthy_converged_long_flat").empty());
}

// --- grad_explosion -----------------------------------------------------------------------------

// A tanh RNN without clipping: grads/global_norm 0.2-4.4, then 17 at step 18, x11 per step to
// 1.8e19 at 38, inf, NaN; the loss goes non-finite at 39. Both fire: the explosion says why, and
// from before the NaN.
TEST_F(RealValidationTest, GradExplosionIntoNaNIsReportedBesideTheNaN) {
  Evaluation ev = Evaluate({CpuRuns()});
  auto g = Of(ev, "grad_explosion", "rnn_no_clip_explosion");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].severity, Severity::kCritical);
  ASSERT_TRUE(g[0].onset_step.has_value());
  EXPECT_GE(*g[0].onset_step, 17);
  EXPECT_LE(*g[0].onset_step, 21);
  auto nan = Of(ev, "non_finite_loss", "rnn_no_clip_explosion");
  ASSERT_EQ(nan.size(), 1u);
  EXPECT_LT(*g[0].onset_step, *nan[0].onset_step);
}

// No loss at all, one per-layer norm: first_layer_grad_norm 1.02 at step 1, 75.7 at 3, then 17,
// 15, 8, 4, 6, 13 before it settles near 0.1-0.5 (RMSprop at lr 0.1). A burst that settled: a
// warning. Isolated 5x points in a noisy SFT run's grad norm are no burst.
TEST_F(RealValidationTest, GradExplosionBurstOnAPerLayerNorm) {
  REQUIRE_SICK_CORPUS();
  Evaluation ev = Evaluate({sick + "/wandb-core-0.25/ashishmeshram229__DA6401-Assignment-1/wandb",
                            sick + "/wandb-core-0.21/1BIMU__UASFT/wandb"});
  auto g = Of(ev, "grad_explosion", "kmfb7k5l");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].series, "first_layer_grad_norm");
  EXPECT_EQ(g[0].severity, Severity::kWarning);
  EXPECT_EQ(g[0].onset_step, 3);
  EXPECT_TRUE(Of(ev, "grad_explosion", "42la265j").empty());
  EXPECT_TRUE(Of(ev, "grad_explosion", "wt8p3buo").empty());  // a norm of exactly 0: vanishing
}

// Generated: a run that logs only per-layer norms, two of them; each layer is read, so the one
// that explodes is found whichever it is.
TEST_F(RealValidationTest, GradExplosionReadsEachLayerWhenNoGlobalNormIsLogged) {
  auto flat = [](int64_t s) { return 0.5 + 0.01 * static_cast<double>(s % 7); };
  for (const std::string bad : {"0", "1"}) {
    const std::string other = bad == "0" ? "1" : "0";
    WriteRun("layers_" + bad, 400,
             {{"grad_norm/layer_" + other, flat},
              {"grad_norm/layer_" + bad, [&](int64_t s) { return s < 200 ? flat(s) : flat(s) * std::exp(0.03 * (s - 200)); }},
              {"Loss/train", [](int64_t s) { return 2.0 / std::sqrt(1.0 + static_cast<double>(s)); }}});
  }
  Evaluation ev = Evaluate({Root()});
  for (const std::string bad : {"0", "1"}) {
    auto g = Of(ev, "grad_explosion", "layers_" + bad);
    ASSERT_EQ(g.size(), 1u) << bad;
    EXPECT_EQ(g[0].series, "grad_norm/layer_" + bad);
  }
}

// Norms that start high and fall as the loss does (64 samples memorised: 0.78 at step 1, median
// 0.0024; a transformer's first steps) are many times their median for many points in a row,
// but never rose above an earlier level; single spikes of a GPU run that recovers, and of a
// healthy HF run, do not last three points: no burst.
TEST_F(RealValidationTest, LargeEarlyGradientsAndSingleSpikesAreNoBurst) {
  Evaluation ev = Evaluate({CpuRuns(), TW_REAL_RUNS_DIR});
  for (const std::string run : {"overfit_64_samples", "overfit_val_f1_only", "transformer_no_warmup", "torch_overfit",
                                "torch_spikes_recover", "hf_trainer_healthy"})
    EXPECT_TRUE(Of(ev, "grad_explosion", run).empty()) << run;
}

// --- lr_schedule_misaligned on a step schedule ---------------------------------------------------

// MultiStepLR milestones [2, 4] (epochs) with gamma 0.01 in a 12-epoch run: 1e-3, 1e-5 from step
// 66, 1e-7 from 130 to 384. A classic step schedule (drops at 1/3 and 2/3 of the run) stays quiet.
TEST_F(RealValidationTest, AStepScheduleThatEndsBeforeHalfTheRun) {
  WriteRun("resnet_steps", 900, {{"lr", [](int64_t s) { return s < 300 ? 0.1 : s < 600 ? 0.01 : 0.001; }},
                                 {"Loss/train", [](int64_t s) { return 2.0 / std::sqrt(1.0 + s); }}});
  Evaluation ev = Evaluate({Root(), CpuRuns()});
  auto lr = Of(ev, "lr_schedule_misaligned", "multistep_floor_early_lightning");
  ASSERT_EQ(lr.size(), 1u);
  EXPECT_EQ(lr[0].severity, Severity::kWarning);
  EXPECT_EQ(lr[0].onset_step, 130);
  EXPECT_NE(lr[0].message.find("its last of 3 steps"), std::string::npos) << lr[0].message;
  EXPECT_TRUE(Of(ev, "lr_schedule_misaligned", "resnet_steps").empty());
  // A real warmup over 5% of the steps, then MultiStepLR x0.1 at 50% and 75%: time at the peak
  // first (the decay has only three levels, the warmup many), then the classic drops.
  EXPECT_TRUE(Of(ev, "lr_schedule_misaligned", "healthy_warmup_multistep").empty())
      << Of(ev, "lr_schedule_misaligned", "healthy_warmup_multistep")[0].message;
}

}  // namespace
}  // namespace tw::diagnose

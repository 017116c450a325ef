// What a run's machinery says about it, on real runs: memory that grows (a leak, or a caching
// allocator reaching a new peak), a gradient clip that is always active (which matters with
// SGD, little with an adaptive optimizer), a run that went silent (unfinished only when its
// LR schedule was heading for an end it never reached), and drops at epoch boundaries (data in
// a fixed order, or a model meeting data it has seen). Real files from tests/data/cpu_runs and
// ../shared/corpus-sick, and generated runs for the edges no file shows.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "support/diagnose_fixture.h"
#include "support/test_env.h"

namespace tw::diagnose {
namespace {

using testing::Tag;

// Ingested from its parent, so that its run name holds "1BIMU".
const std::string kSftParent = "/wandb-core-0.21";  // 1BIMU__UASFT: HF SFT, AdamW, max_grad_norm 1

class RealLifecycleTest : public testing::RealRunsFixture {
 protected:
  // The first `fraction` of `src`'s bytes as Root()/run/<its name>: a run cut off mid-write,
  // its last record torn (the reader keeps what is whole).
  void WriteCutCopy(const std::string& src, const std::string& run, double fraction) {
    std::ifstream in(src, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(bytes.size(), 1000u) << src;
    std::filesystem::create_directories(Root() + "/" + run);
    std::ofstream out(Root() + "/" + run + "/" + std::filesystem::path(src).filename().string(), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() * fraction));
  }

  // Copies of committed CPU runs into Root(), each named as its directory.
  void CopyCpuRuns(const std::vector<std::string>& runs) {
    for (const auto& r : runs) CopyRun(CpuRuns() + "/" + r, r);
  }

  static std::string OnlyFile(const std::string& dir) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) return e.path().string();
    return "";
  }

  // As of `minutes` after the store's last point.
  Evaluation EvaluateAfter(double minutes) {
    Ingest();
    return EvaluateStore({}, std::nullopt, 60 * minutes);
  }
};

// --- memory_growth ------------------------------------------------------------------------------

// Two real leaks (losses kept as tensors in a list; a feature cache that never evicts) rise at
// every reading. The SFT run's GPU memory rises in three jumps (13.7, 14.8, 20.8, 23.5 GB) as
// longer batches arrive and then holds: the allocator reaching new peaks, not a leak.
TEST_F(RealLifecycleTest, MemoryGrowthIsALeakNotAnAllocatorStaircase) {
  const std::string sick = testing::CorpusSickDir();
  CopyCpuRuns({"leak_loss_history", "growing_feature_cache"});
  std::vector<std::string> paths = {Root()};
  if (!sick.empty()) paths.push_back(sick + kSftParent);
  Evaluation ev = Evaluate(paths);
  for (const char* leak : {"leak_loss_history", "growing_feature_cache"}) {
    SCOPED_TRACE(leak);
    auto m = Of(ev, "memory_growth", leak);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_EQ(m[0].severity, Severity::kWarning);
    // The growth in percent (once printed as +0% for integer readings).
    EXPECT_EQ(m[0].message.find("(+0%)"), std::string::npos) << m[0].message;
    EXPECT_NE(m[0].message.find("readings rose"), std::string::npos) << m[0].message;
  }
  EXPECT_NE(Of(ev, "memory_growth", "leak_loss_history")[0].message.find("289.6 to 492.3 (+70%)"), std::string::npos)
      << "rss from 290 to 492 MB (the trend's ends, after the skipped first tenth)";
  if (sick.empty()) GTEST_SKIP() << "../shared/corpus-sick not found: the staircase half did not run";
  EXPECT_TRUE(Of(ev, "memory_growth", "1BIMU").empty()) << Of(ev, "memory_growth", "1BIMU")[0].message;
}

// --- grad_clip_saturation -------------------------------------------------------------------------

// Real: SGD with max_grad_norm 0.01 (norms ~50x above it) is a warning; the SFT run's AdamW with
// the HF default max_grad_norm 1 and norms ~3x above it is info, and says why.
TEST_F(RealLifecycleTest, ClipSaturationWeighsTheOptimizerOnRealRuns) {
  const std::string sick = testing::CorpusSickDir();
  if (sick.empty()) GTEST_SKIP() << "../shared/corpus-sick not found";
  CopyCpuRuns({"clip_saturation_tiny_max_norm"});
  Evaluation ev = Evaluate({Root(), sick + kSftParent});
  auto sgd = Of(ev, "grad_clip_saturation", "clip_saturation_tiny_max_norm");
  ASSERT_EQ(sgd.size(), 1u);
  EXPECT_EQ(sgd[0].severity, Severity::kWarning);
  auto adamw = Of(ev, "grad_clip_saturation", "1BIMU");
  ASSERT_EQ(adamw.size(), 1u);
  EXPECT_EQ(adamw[0].severity, Severity::kInfo) << adamw[0].message;
  EXPECT_NE(adamw[0].message.find("adamw_torch"), std::string::npos) << adamw[0].message;
}

// Generated: the same clipped norms under each optimizer; an adaptive one still warns when the
// norms are far above the threshold, and a run that names no optimizer is judged as SGD.
TEST_F(RealLifecycleTest, ClipSaturationUnderEachOptimizer) {
  auto run = [&](const std::string& name, const std::string& optim, double ratio) {
    std::vector<std::string> extra;
    std::vector<std::pair<std::string, testing::HParamValue>> hp = {{"max_grad_norm", 1.0}};
    if (!optim.empty()) hp.push_back({"optim", optim});
    extra.push_back(testing::HParamsStartEvent(testing::kRunT0, hp, false));
    WriteRun(name, 400,
             {Tag{"train/loss", [](int64_t s) { return 2.0 * std::exp(-s / 200.0) + 0.3; }},
              Tag{"train/grad_norm", [ratio](int64_t s) { return ratio * (1.0 + 0.2 * std::sin(s * 0.7)); }}},
             extra);
  };
  run("adamw_3x", "adamw_torch", 3);
  run("lion_3x", "Lion", 3);
  run("sgd_3x", "sgd", 3);
  run("unnamed_3x", "", 3);
  run("adamw_30x", "AdamW", 30);
  Evaluation ev = Evaluate();
  auto severity = [&](const std::string& r) {
    auto o = DiagnoseFixture::Of(ev, "grad_clip_saturation", r);
    EXPECT_EQ(o.size(), 1u) << r;
    return o.empty() ? Severity::kCritical : o[0].severity;
  };
  EXPECT_EQ(severity("adamw_3x"), Severity::kInfo);
  EXPECT_EQ(severity("lion_3x"), Severity::kInfo);
  EXPECT_EQ(severity("sgd_3x"), Severity::kWarning);
  EXPECT_EQ(severity("unnamed_3x"), Severity::kWarning);
  EXPECT_EQ(severity("adamw_30x"), Severity::kWarning);
}

// Generated, PyTorch's add_hparams: the hyperparameters land in a child run (a subdirectory
// named by the time), and they are the parent's: its clip threshold and its planned steps.
TEST_F(RealLifecycleTest, HyperparametersInAChildRunAreTheRunsOwn) {
  WriteRun("parent", 400,
           {Tag{"train/loss", [](int64_t s) { return 2.0 * std::exp(-s / 200.0) + 0.3; }},
            Tag{"train/grad_norm", [](int64_t s) { return 3.0 * (1.0 + 0.2 * std::sin(s * 0.7)); }}});
  WriteRun("parent/1700000000.5", 1, {Tag{"hparam/final_loss", [](int64_t) { return 0.3; }}},
           {testing::HParamsStartEvent(testing::kRunT0, {{"max_grad_norm", 1.0}, {"max_steps", 4000.0}}, false)});
  Evaluation ev = EvaluateAfter(70);
  auto clip = DiagnoseFixture::Of(ev, "grad_clip_saturation", "parent");
  ASSERT_EQ(clip.size(), 1u);
  EXPECT_NE(clip[0].message.find("clip threshold 1 "), std::string::npos) << clip[0].message;
  auto stale = DiagnoseFixture::Of(ev, "stale_run", "parent");
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_NE(stale[0].message.find("of a planned 4000"), std::string::npos) << stale[0].message;
}

// --- stale_run ---------------------------------------------------------------------------------

// Real runs cut off mid-write (the first ~55% of the file) and silent for 70 minutes: an HF
// linear decay and a warmup-cosine schedule were heading for an end they never reached. The
// whole of a Keras run with an exponential decay (x0.9 per epoch, no end) and a cyclic LR (it
// falls in every cycle) are quiet: stopping in them says nothing about being done.
TEST_F(RealLifecycleTest, StaleRunNeedsAScheduleThatHeadsForAnEnd) {
  WriteCutCopy(OnlyFile(CpuRuns() + "/healthy_hf_mlp_eval"), "cut_linear", 0.55);
  WriteCutCopy(OnlyFile(CpuRuns() + "/healthy_mlp_warmup_cosine"), "cut_cosine", 0.55);
  CopyCpuRuns({"healthy_cnn_keras", "cyclic_lr_oscillation"});
  Evaluation ev = EvaluateAfter(70);
  for (const char* cut : {"cut_linear", "cut_cosine"}) {
    auto s = Of(ev, "stale_run", cut);
    ASSERT_EQ(s.size(), 1u) << cut;
    EXPECT_NE(s[0].message.find("still decaying"), std::string::npos) << s[0].message;
  }
  EXPECT_TRUE(Of(ev, "stale_run", "healthy_cnn_keras").empty()) << Of(ev, "stale_run", "healthy_cnn_keras")[0].message;
  EXPECT_TRUE(Of(ev, "stale_run", "cyclic_lr").empty()) << Of(ev, "stale_run", "cyclic_lr")[0].message;
}

// Generated: the same stop at 60% of a linear and of an exponential decay from the same peak.
TEST_F(RealLifecycleTest, StaleRunReadsTheDecaysShape) {
  auto loss = [](int64_t s) { return 2.0 * std::exp(-s / 300.0) + 0.2; };
  WriteRun("linear", 600, {Tag{"train/loss", loss}, Tag{"lr", [](int64_t s) { return 1e-3 * (1 - s / 1000.0); }}});
  WriteRun("exponential", 600,
           {Tag{"train/loss", loss}, Tag{"lr", [](int64_t s) { return 1e-3 * std::pow(0.999, s); }}});
  Evaluation ev = EvaluateAfter(70);
  EXPECT_EQ(DiagnoseFixture::Of(ev, "stale_run", "linear").size(), 1u);
  EXPECT_TRUE(DiagnoseFixture::Of(ev, "stale_run", "exponential").empty());
}

// --- epoch_boundary_jumps ----------------------------------------------------------------------

// Real runs: data sorted by difficulty within each epoch and two sources read one after the
// other climb through every epoch and fall back at its boundary (a sawtooth, 30-90 % within an
// epoch). A healthy 4-epoch HF run (held out: tests/data/heldout) drops 10-13 % at each new
// epoch, as a model meeting data it has seen does, and then holds (3 % within an epoch): quiet.
TEST_F(RealLifecycleTest, EpochDropsAreASawtoothNotAStaircase) {
  CopyCpuRuns({"sorted_by_difficulty_no_shuffle", "concat_sources_no_shuffle"});
  CopyRun(HeldOut() + "/healthy_hf_mlp_eval_seed2000", "staircase");
  Evaluation ev = Evaluate();
  for (const char* sawtooth : {"sorted_by_difficulty_no_shuffle", "concat_sources_no_shuffle"}) {
    auto e = Of(ev, "epoch_boundary_jumps", sawtooth);
    ASSERT_EQ(e.size(), 1u) << sawtooth;
    EXPECT_NE(e[0].evidence.find("within_epoch_rise"), std::string::npos) << e[0].evidence;
  }
  EXPECT_TRUE(Of(ev, "epoch_boundary_jumps", "staircase").empty())
      << Of(ev, "epoch_boundary_jumps", "staircase")[0].message;
}

// --- loss_at_chance: an accuracy that names K ------------------------------------------------------

// Held out (tests/data/heldout): a 12-layer sigmoid net at 2.27 for 96 points, 1.6 % under
// ln 10 (an imbalanced set's label entropy: too far for a K guessed from common counts alone),
// with a validation accuracy of 0.12, 0.16, 0.16: the share of the class it guesses, moving as
// that class changes. The accuracy, between 1/10 and 2/10, names K = 10 and shows no learning.
TEST_F(RealLifecycleTest, AnAccuracyBelowTwiceChanceNamesKAndShowsNoLearning) {
  CopyRun(HeldOut() + "/deep_sigmoid_vanishing_seed2000", "sigmoid");
  Evaluation ev = Evaluate();
  auto c = Of(ev, "loss_at_chance", "sigmoid");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NE(c[0].message.find("ln 10"), std::string::npos) << c[0].message;
  EXPECT_NE(c[0].message.find("one class's share among 10"), std::string::npos) << c[0].message;
}

// Held out: SGD at lr 0.8 blows up in its first steps (17 in a 5-point median, a first-epoch
// loss of 9.65) and then bounces at ln 10 for 250 steps, val_acc 0.10-0.13. With K known from
// the accuracy, a start above chance is no better than a guess: it is at chance from the start.
TEST_F(RealLifecycleTest, AStartAboveChanceIsNoBetterThanAGuess) {
  CopyRun(HeldOut() + "/cnn_sgd_lr_blowup_seed3000", "blowup");
  Evaluation ev = Evaluate();
  auto c = Of(ev, "loss_at_chance", "blowup");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_NE(c[0].message.find("ln 10"), std::string::npos) << c[0].message;
  ASSERT_TRUE(c[0].onset_step.has_value());
  EXPECT_LE(*c[0].onset_step, 12) << c[0].message;
}

// --- RL losses follow the returns ------------------------------------------------------------

// Real A2C runs (SB3 names): the return climbs from ~0.5 to ~21 and the unnormalized value loss
// inside train/loss rises with it, 70-130x (the committed run, and a held-out draw whose loss
// also steps up once without coming back). Information naming the returns, not a divergence
// or an unrecovered spike.
TEST_F(RealLifecycleTest, AnRlLossRisingWithTheReturnIsNoAlarm) {
  CopyCpuRuns({"healthy_a2c_value_loss_grows"});
  CopyRun(HeldOut() + "/healthy_a2c_value_loss_grows_seed2000", "a2c_seed2000");
  Evaluation ev = Evaluate();
  for (const char* run : {"healthy_a2c_value_loss_grows", "a2c_seed2000"}) {
    auto d = Of(ev, "loss_divergence", run);
    ASSERT_EQ(d.size(), 1u) << run;
    EXPECT_EQ(d[0].severity, Severity::kInfo) << d[0].message;
    EXPECT_NE(d[0].message.find("episode return is still climbing"), std::string::npos) << d[0].message;
    for (const auto& s : Of(ev, "loss_spikes", run)) EXPECT_EQ(s.severity, Severity::kInfo) << s.message;
  }
  ASSERT_FALSE(Of(ev, "loss_spikes", "a2c_seed2000").empty());  // the step that stayed up: told, as information
}

}  // namespace
}  // namespace tw::diagnose

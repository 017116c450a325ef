// The seeds' activation and quantization checks (issue 18 part 3) on runs trained on a CPU with
// known causes: dead ReLUs, saturated tanh/sigmoid units, attention entropy collapse, a widening
// QAT gap, ternary weights collapsing to 0. Tuned on tests/data/cpu_runs
// (tools/cpu_runs/activation_runs.py), judged on tests/data/heldout/ha_* as well
// (tools/cpu_runs/heldout_activations.py: other data, models, optimizers, tag names and
// histogram buckets), each against healthy runs that log the same tags.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "diagnose/engine.h"
#include "diagnose/role_inference.h"
#include "diagnose/stats.h"
#include "support/diagnose_fixture.h"
#include "support/test_env.h"

namespace tw::diagnose {
namespace {

class ActivationChecksTest : public testing::RealRunsFixture {
 protected:
  void Copy(const std::vector<std::string>& runs, const std::string& dir) {
    for (const std::string& run : runs) CopyRun(dir + "/" + run, run);
  }
  // `rule` is silent on `run`, and could have run there (the run logs `role`).
  void ExpectQuiet(const Evaluation& ev, const std::string& rule, const std::string& run, const std::string& role) {
    EXPECT_GT(RoleCount(run, role), 0u) << run << " logs no " << role << ": its quiet says nothing";
    for (const auto& o : Of(ev, rule, run)) ADD_FAILURE() << run << ": " << o.series << ": " << o.message;
  }
};

// SGD at lr 0.6 kills layers 2 and 3 within 65 steps (dead shares 0.92-0.96 at the end); biases
// of -4 leave them dead from the first step. The healthy twin keeps ~half its outputs at zero
// and at most 15 % of a layer's units dead: sparse, not dead.
TEST_F(ActivationChecksTest, DeadReluLayers) {
  Copy({"dead_relu_high_lr", "dead_relu_bias_init", "healthy_relu_sparse"}, CpuRuns());
  const Evaluation ev = Evaluate();
  auto lr = On(ev, "dead_relu", "dead_relu_high_lr", "act/relu_dead_frac/layer2");
  ASSERT_EQ(lr.size(), 1u);
  EXPECT_EQ(lr[0].severity, Severity::kWarning);
  EXPECT_NE(lr[0].message.find("died during training"), std::string::npos) << lr[0].message;
  EXPECT_EQ(On(ev, "dead_relu", "dead_relu_high_lr", "act/relu_zero_frac/layer3").size(), 1u);
  EXPECT_TRUE(On(ev, "dead_relu", "dead_relu_high_lr", "act/relu_dead_frac/layer1").empty());
  auto init = On(ev, "dead_relu", "dead_relu_bias_init", "act/relu_dead_frac/layer3");
  ASSERT_EQ(init.size(), 1u);
  EXPECT_NE(init[0].message.find("dead already at the first logged step"), std::string::npos) << init[0].message;
  ExpectQuiet(ev, "dead_relu", "healthy_relu_sparse", "act_zero_frac");
  ExpectQuiet(ev, "dead_relu", "healthy_relu_sparse", "dead_units");
}

// Weights of std 1.0 pin tanh layers at +-1 (49-79 % of outputs); raw x60 features pin the
// first sigmoid layer (89 %). A default-init tanh net on standardized data keeps 0-13 %.
TEST_F(ActivationChecksTest, SaturatedActivations) {
  Copy({"saturated_tanh_large_init", "saturated_sigmoid_raw_inputs", "healthy_tanh"}, CpuRuns());
  const Evaluation ev = Evaluate();
  EXPECT_EQ(On(ev, "activation_saturation", "saturated_tanh_large_init", "act/tanh_sat_frac/layer2").size(), 1u);
  auto sig = On(ev, "activation_saturation", "saturated_sigmoid_raw_inputs", "act/sigmoid_sat_frac/layer1");
  ASSERT_EQ(sig.size(), 1u);
  EXPECT_NE(sig[0].message.find("saturated from the first logged step"), std::string::npos) << sig[0].message;
  EXPECT_TRUE(On(ev, "activation_saturation", "saturated_sigmoid_raw_inputs", "act/sigmoid_sat_frac/layer2").empty());
  ExpectQuiet(ev, "activation_saturation", "healthy_tanh", "act_saturation");
}

// Adam 1e-2 without warmup: 6 of 8 heads fall from 3.07 nats to 0.2-0.6. With warmup the heads
// sharpen to 45-90 % of their start: attention learning, not collapsing.
TEST_F(ActivationChecksTest, AttentionEntropyCollapse) {
  Copy({"attn_collapse_no_warmup", "healthy_attn_warmup"}, CpuRuns());
  const Evaluation ev = Evaluate();
  auto sick = Of(ev, "attention_entropy_collapse", "attn_collapse_no_warmup");
  ASSERT_EQ(sick.size(), 1u);
  EXPECT_EQ(sick[0].series, "");
  EXPECT_NE(sick[0].message.find(" of the 8 attention entropies collapsed"), std::string::npos) << sick[0].message;
  ExpectQuiet(ev, "attention_entropy_collapse", "healthy_attn_warmup", "attn_entropy");
}

// Fake quantization off in the training forward, the range frozen: the gap grows from ~0.01 to
// 0.83 (2.8x the float loss). QAT with a range that follows the weights keeps a gap of 0.03.
TEST_F(ActivationChecksTest, QuantizationGapWidens) {
  Copy({"qat_gap_fixed_range", "healthy_qat_dynamic_range"}, CpuRuns());
  const Evaluation ev = Evaluate();
  auto sick = Of(ev, "qat_gap_widening", "qat_gap_fixed_range");
  ASSERT_EQ(sick.size(), 1u);
  EXPECT_EQ(sick[0].message.rfind("qat/loss is ", 0), 0u) << sick[0].message;
  ExpectQuiet(ev, "qat_gap_widening", "healthy_qat_dynamic_range", "qat_loss");
  // The QAT losses keep their loss roles: the run's own training loss is still diagnosed.
  EXPECT_GT(RoleCount("healthy_qat_dynamic_range", "fp_loss"), 0u);
  EXPECT_GT(RoleCount("healthy_qat_dynamic_range", "train_loss"), 0u);
}

// A fixed threshold under weight decay: 89-93 % of the ternary weights at 0 (torch
// add_histogram's exponential buckets). TWN's threshold follows the weights: 36-73 %.
TEST_F(ActivationChecksTest, TernaryWeightsCollapseToZero) {
  Copy({"ternary_collapse_fixed_threshold", "healthy_ternary_twn"}, CpuRuns());
  const Evaluation ev = Evaluate();
  auto sick = On(ev, "ternary_weight_collapse", "ternary_collapse_fixed_threshold", "weights/ternary/layer2");
  ASSERT_EQ(sick.size(), 1u);
  EXPECT_NE(sick[0].message.find("collapsed to zero"), std::string::npos) << sick[0].message;
  ExpectQuiet(ev, "ternary_weight_collapse", "healthy_ternary_twn", "ternary_weights");
}

// Held out (tools/cpu_runs/heldout_activations.py): a regression net on sums of sines, RMSprop,
// Adam, SGD and AdamW, pre- and post-LN encoders on a sort task, 3-bit QAT, TF2 histograms of 64
// bins, and other tag names (dnn/hiddenlayer_N/dead_neurons_pct in percent,
// activations/fcN/zero_fraction, saturation/tanh_1, attention/entropy/blockN,
// eval/quantized_loss against eval/fp_loss, ternary_weights/fcN). Two of the three no-warmup
// encoders did not collapse (pre-LN learns the sort with entropies near uniform): quiet.
TEST_F(ActivationChecksTest, HeldOutRuns) {
  const std::vector<std::string> sick = {"ho_dead_relu_rmsprop_lr", "ho_saturated_unscaled_sensor_data",
                                         "ho_attn_collapse_postln_lr_0_05", "ho_qat_gap_float_training",
                                         "ho_ternary_collapse_adamw_decay"};
  const std::vector<std::string> quiet = {"ho_healthy_relu_regression", "ho_healthy_squash_layernorm",
                                          "ho_attn_preln_no_warmup", "ho_attn_preln_lr_0_2", "ho_healthy_attn_sort",
                                          "ho_healthy_qat_3bit", "ho_healthy_ternary"};
  Copy(sick, HeldOut());
  Copy(quiet, HeldOut());
  const Evaluation ev = Evaluate();
  EXPECT_EQ(On(ev, "dead_relu", "ho_dead_relu_rmsprop_lr", "dnn/hiddenlayer_2/dead_neurons_pct").size(), 1u);
  EXPECT_EQ(On(ev, "dead_relu", "ho_dead_relu_rmsprop_lr", "activations/fc3/zero_fraction").size(), 1u);
  EXPECT_EQ(On(ev, "activation_saturation", "ho_saturated_unscaled_sensor_data", "saturation/tanh_1").size(), 1u);
  EXPECT_EQ(Of(ev, "attention_entropy_collapse", "ho_attn_collapse_postln_lr_0_05").size(), 1u);
  EXPECT_EQ(Of(ev, "qat_gap_widening", "ho_qat_gap_float_training").size(), 1u);
  EXPECT_EQ(On(ev, "ternary_weight_collapse", "ho_ternary_collapse_adamw_decay", "ternary_weights/fc1").size(), 1u);
  ExpectQuiet(ev, "dead_relu", "ho_healthy_relu_regression", "act_zero_frac");
  ExpectQuiet(ev, "activation_saturation", "ho_healthy_squash_layernorm", "act_saturation");
  for (const char* run : {"ho_attn_preln_no_warmup", "ho_attn_preln_lr_0_2", "ho_healthy_attn_sort"})
    ExpectQuiet(ev, "attention_entropy_collapse", run, "attn_entropy");
  ExpectQuiet(ev, "qat_gap_widening", "ho_healthy_qat_3bit", "qat_loss");
  ExpectQuiet(ev, "ternary_weight_collapse", "ho_healthy_ternary", "ternary_weights");
}

// The activation and QAT tag names of public code and of our runs are read as their roles, and
// names that merely resemble them are not: a weight's sparsity, a count of zeros, an RL policy's
// entropy, a binary cross-entropy.
TEST(ActivationRoles, InferredFromTheName) {
  auto top = [](const std::string& tag) {
    std::vector<RoleGuess> g = GuessRoles(tag, false);
    return g.empty() ? std::string("none") : g.front().role;
  };
  auto has = [](const std::string& tag, const std::string& role) {
    for (const RoleGuess& g : GuessRoles(tag, false))
      if (g.role == role) return true;
    return false;
  };
  for (const std::string role : {"dead_units", "act_zero_frac", "act_saturation", "attn_entropy", "qat_loss", "fp_loss"})
    for (const std::string& tag : InferredExampleTags(role)) {
      if (role == "act_zero_frac" && tag.find("zero_fraction") != std::string::npos) continue;  // a pattern names it
      EXPECT_TRUE(has(tag, role)) << tag << " is not read as " << role;
    }
  EXPECT_EQ(top("relu_dead_frac/block_2"), "dead_units");
  EXPECT_EQ(top("conv1/sparsity"), "act_zero_frac");  // the TF CIFAR-10 tutorial's activation summary
  EXPECT_EQ(top("attn/layer0/entropy_head3"), "attn_entropy");
  EXPECT_EQ(top("weights/sparsity"), "none");       // a pruning mask's, not an activation's
  EXPECT_EQ(top("num-zeros"), "none");              // Megatron-LM: zero entries in the gradient
  EXPECT_EQ(top("dead_units_count"), "none");       // a count is no share
  EXPECT_EQ(top("losses/entropy"), "none");         // a policy's entropy
  EXPECT_FALSE(has("train/bce_loss", "qat_loss"));  // binary cross-entropy, no binary network
  EXPECT_FALSE(has("q_loss", "qat_loss"));          // a Q-function's loss
  EXPECT_TRUE(has("val_loss_int8", "qat_loss"));
  EXPECT_TRUE(has("val_loss_int8", "val_loss"));  // it stays a loss too
  EXPECT_FALSE(has("fp32_vs_int8_loss", "qat_loss"));
  EXPECT_EQ(GuessHistogramRoles("model.layer1.ternary_weight").size(), 1u);
  EXPECT_TRUE(GuessHistogramRoles("layer1/weight").empty());
}

// A ternary layer's {-a, 0, +a} under torch's exponential buckets (the last limit DBL_MAX, the
// zero bucket [0, 1e-12)) and W&B's even bins; all-zero weights; and buckets that are not triples.
TEST(HistogramShares, TernaryValuesUnderAnyBucketing) {
  const double big = std::numeric_limits<double>::max();
  // 30 at -0.2, 50 at 0, 20 at 0.2; the largest sample's bucket reaches DBL_MAX.
  const std::vector<double> torch_like = {-0.22, -0.2, 30, 0, 1e-12, 50, 0.19, big, 20};
  stats::HistShares h = stats::HistogramShares(torch_like, -0.2, 0.2, 0.25);
  ASSERT_TRUE(h.ok);
  EXPECT_DOUBLE_EQ(h.zero, 0.5);
  EXPECT_DOUBLE_EQ(h.negative, 0.3);
  EXPECT_DOUBLE_EQ(h.positive, 0.2);
  const std::vector<double> even = {-0.2, -0.19, 30, 0, 0.0125, 50, 0.1875, 0.2, 20};
  EXPECT_DOUBLE_EQ(stats::HistogramShares(even, -0.2, 0.2, 0.25).zero, 0.5);
  EXPECT_DOUBLE_EQ(stats::HistogramShares(std::vector<double>{0, 0, 64}, 0, 0, 0.25).zero, 1.0);
  EXPECT_FALSE(stats::HistogramShares(std::vector<double>{0, 1}, 0, 1, 0.25).ok);
  EXPECT_FALSE(stats::HistogramShares(std::vector<double>{0, 1, -3}, 0, 1, 0.25).ok);
}

}  // namespace
}  // namespace tw::diagnose

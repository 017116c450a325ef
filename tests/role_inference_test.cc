// Role inference (role_inference.h, roles.cc): tags no pattern names are read by their words
// and checked against their values. tests/data/tag_roles.tsv holds 600+ real tag names from
// public logs, source and docs (detectron2, YOLO, HF, Lightning, Keras, Megatron, fairseq,
// nanoGPT, timm, mm*, SB3, W&B system metrics, ...), each with the role a careful engineer
// gives it; `none` for counters, clocks, rewards and the like.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>

#include "diagnose/engine.h"
#include "diagnose/role_inference.h"
#include "diagnose/roles.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/diagnose_fixture.h"
#include "support/test_env.h"

namespace tw::diagnose {
namespace {

// The role a tag gets by name alone, as AssignRoles decides it for a run holding only it: the
// first default pattern (any run) that matches, else the most confident guess.
std::string RoleByName(const std::string& tag) {
  for (const RolePattern& p : DefaultRolePatterns()) {
    if (!p.run_glob.empty() || !GlobMatch(p.tag_glob, tag)) continue;
    return p.role == "ignore" ? "none" : p.role;
  }
  std::vector<RoleGuess> g = GuessRoles(tag, false);
  return g.empty() ? "none" : g.front().role;
}

struct Row {
  std::string tag, role, direction, source;
};

std::vector<Row> ReadTable() {
  std::istringstream in(testing::ReadFile(TW_TAG_ROLES_FILE));
  std::vector<Row> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    Row r;
    std::istringstream f(line);
    std::getline(f, r.tag, '\t');
    std::getline(f, r.role, '\t');
    std::getline(f, r.direction, '\t');
    std::getline(f, r.source, '\t');
    if (!r.tag.empty()) rows.push_back(r);
  }
  return rows;
}

TEST(RoleInference, TokensSplitPunctuationHumpsAndDigits) {
  auto has = [](const std::string& tag, const std::string& w) {
    std::vector<std::string> t = TagTokens(tag);
    return std::find(t.begin(), t.end(), w) != t.end();
  };
  EXPECT_TRUE(has("metrics/mAP50-95(B)", "map"));
  EXPECT_TRUE(has("metrics/mAP50-95(B)", "50"));
  EXPECT_TRUE(has("val/mIoU", "miou"));
  EXPECT_TRUE(has("trainLoss", "loss"));
  EXPECT_TRUE(has("trainLoss", "train"));
  EXPECT_TRUE(has("system/gpu.0.memoryAllocatedBytes", "allocated"));
  EXPECT_TRUE(has("Training loss ", "training"));
  EXPECT_TRUE(has("x/lr0", "lr"));
  EXPECT_FALSE(has("x/lr0", "x/lr0"));
}

TEST(RoleInference, RealTagNamesGetTheRoleAnEngineerWouldGive) {
  const std::vector<Row> rows = ReadTable();
  ASSERT_GE(rows.size(), 200u);
  std::map<std::string, std::pair<int, int>> per_role;  // right, total
  std::string wrong;
  int right = 0, directions = 0;
  for (const Row& r : rows) {
    const std::string got = RoleByName(r.tag);
    auto& [ok, n] = per_role[r.role];
    ++n;
    if (got == r.role) {
      ++ok;
      ++right;
    } else {
      wrong += "  " + r.tag + ": " + got + ", expected " + r.role + " (" + r.source + ")\n";
    }
    const int d = RoleDirection(r.role);
    directions += (r.direction == "lower" && d == -1) || (r.direction == "higher" && d == 1) ||
                  (r.direction == "-" && d == 0);
  }
  // Every row's direction follows from its role.
  EXPECT_EQ(directions, static_cast<int>(rows.size()));
  const double share = static_cast<double>(right) / static_cast<double>(rows.size());
  std::string table;
  for (const auto& [role, c] : per_role)
    table += "  " + role + " " + std::to_string(c.first) + "/" + std::to_string(c.second) + "\n";
  // Names are ambiguous (the same `time` is seconds per iteration in detectron2 and a clock in
  // Ultralytics); nine in ten by name alone, and no role below three in four.
  EXPECT_GE(share, 0.9) << right << " of " << rows.size() << " right\n" << table << wrong;
  for (const auto& [role, c] : per_role)
    EXPECT_GE(c.first, 0.75 * c.second) << role << "\n" << table << wrong;
  std::cout << "[ role names ] " << right << " of " << rows.size() << " real tag names right\n" << table;
}

TEST(RoleInference, ValuesRuleOutAGuessTheirShapeDoesNotFit) {
  std::vector<double> clock, noisy, counter, lr, nan_heavy;
  for (int i = 0; i < 200; ++i) {
    clock.push_back(12.5 * i + 3);                              // a cumulative time_ms
    noisy.push_back(0.1 + 0.05 * ((i * 7919) % 13) / 13.0);      // a loss, not an LR
    counter.push_back(i);                                        // a step counter
    lr.push_back(1e-3 * std::min(1.0, i / 20.0) * (1 - i / 400.0));  // warmup and decay
    nan_heavy.push_back(i % 4 == 0 ? 0.3 : std::nan(""));       // an empty AP bucket
  }
  EXPECT_NE(ShapeObjection("step_time", MeasureShape(clock)), "");
  EXPECT_EQ(ShapeObjection("step_time", MeasureShape(noisy)), "");
  EXPECT_NE(ShapeObjection("lr", MeasureShape(noisy)), "");
  EXPECT_EQ(ShapeObjection("lr", MeasureShape(lr)), "");
  EXPECT_NE(ShapeObjection("train_loss", MeasureShape(counter)), "");
  EXPECT_EQ(ShapeObjection("train_loss", MeasureShape(noisy)), "");
  EXPECT_NE(ShapeObjection("val_metric", MeasureShape(nan_heavy)), "");
  // A loss that is NaN throughout is still the loss: the NaN is the finding.
  EXPECT_EQ(ShapeObjection("train_loss", MeasureShape(std::vector<double>(20, std::nan("")))), "");
  EXPECT_NE(ShapeObjection("memory", MeasureShape({-1, 2, 3})), "");
}

// A run written as a user would name it: the roles come from the words, checked by the values,
// with the confidence and direction in run_roles.
class RoleInferenceRun : public testing::DiagnoseFixture {};

TEST_F(RoleInferenceRun, InventedNamesInARunAreMappedAndExplained) {
  WriteRun("exp1", 300,
           {{"trn/xent", [](int64_t s) { return 2.3 * std::exp(-s / 80.0) + 0.1; }},
            {"time/iter_ms", [](int64_t s) { return 100.0 + (s * 37) % 11; }},
            {"train/time_ms", [](int64_t s) { return 105.0 * s; }},  // a clock
            {"optim/lr", [](int64_t s) { return 1e-3 * (1 - s / 600.0); }},
            {"sys/rss_mb", [](int64_t s) { return 900.0 + s / 10; }},
            {"global_step", [](int64_t s) { return static_cast<double>(s); }},
            {"val/mIoU", [](int64_t s) { return 0.3 + s / 1000.0; }, 50},
            {"valid/ce", [](int64_t s) { return 2.0 * std::exp(-s / 100.0) + 0.2; }, 50},
            {"bbox/APl", [](int64_t) { return std::nan(""); }, 50}});  // an empty bucket
  Ingest();
  Result<std::unique_ptr<Engine>> engine = Engine::Open(Db(), {});
  ASSERT_TRUE(engine.ok());
  Result<RoleMap> map = (*engine)->Roles(nullptr);
  ASSERT_TRUE(map.ok());
  std::map<std::string, RoleAssignment> by_role;
  for (const auto& a : map->assignments) by_role[a.role] = a;
  EXPECT_EQ(by_role["train_loss"].tag, "trn/xent");
  EXPECT_EQ(by_role["train_loss"].direction, -1);
  EXPECT_LT(by_role["train_loss"].confidence, 1.0);
  EXPECT_NE(by_role["train_loss"].why.find("inferred"), std::string::npos) << by_role["train_loss"].why;
  EXPECT_EQ(by_role["val_loss"].tag, "valid/ce");
  EXPECT_EQ(by_role["val_metric"].tag, "val/mIoU");  // not the NaN bucket
  EXPECT_EQ(by_role["val_metric"].direction, 1);
  EXPECT_EQ(by_role["step_time"].tag, "time/iter_ms");  // not the clock
  EXPECT_EQ(by_role["lr"].tag, "optim/lr");
  EXPECT_EQ(by_role["memory"].tag, "sys/rss_mb");
  EXPECT_EQ(by_role.count("epoch"), 0u);  // global_step is no role
  // A user's pattern still overrides: [roles] ignore takes a tag out.
  EngineOptions options;
  options.roles.push_back({"ignore", "sys/*", "", "config"});
  Result<std::unique_ptr<Engine>> e2 = Engine::Open(Db(), options);
  ASSERT_TRUE(e2.ok());
  Result<RoleMap> m2 = (*e2)->Roles(nullptr);
  ASSERT_TRUE(m2.ok());
  for (const auto& a : m2->assignments) EXPECT_NE(a.role, "memory") << a.tag;
}

}  // namespace
}  // namespace tw::diagnose

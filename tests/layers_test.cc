// The include half of the layering check (tools/check_layers.cc, run by every build before any
// stage compiles; cmake/layers.cmake has the stages). The link half is the build itself: each
// tw_layer_check_<stage> program links that stage's whole archive with only the stages below.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/test_env.h"

namespace tw::testing {
namespace {

// A small src/ of three stages: base, store (on base), ingest (on store and base).
class LayersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_ / "src/base");
    std::filesystem::create_directories(dir_ / "src/store");
    std::filesystem::create_directories(dir_ / "src/ingest");
    WriteFile(dir_ / "layers.txt", "base:base\nstore:store,base\ningest:ingest,store,base\n");
    WriteFile(dir_ / "src/base/status.h", "#pragma once\n#include <string>\n");
    WriteFile(dir_ / "src/store/store.h", "#pragma once\n#include \"base/status.h\"\n");
    WriteFile(dir_ / "src/ingest/ingest.cc", "#include \"ingest/ingest.h\"\n#include \"store/store.h\"\n");
  }
  int Check(std::string* out) {
    return RunCommand(ShellQuote(TW_CHECK_LAYERS_BINARY) + " " + ShellQuote(dir_ / "src") + " " +
                          ShellQuote(dir_ / "layers.txt") + " " + ShellQuote(dir_ / "stamp"),
                      out);
  }
  TempDir dir_;
};

TEST_F(LayersTest, IncludesDownwardsPassAndLeaveTheStamp) {
  std::string out;
  EXPECT_EQ(Check(&out), 0) << out;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "stamp"));
}

TEST_F(LayersTest, ABackEdgeFailsNamingTheFileAndLine) {
  // store reaching up into ingest, on its third line, written with spaces.
  WriteFile(dir_ / "src/store/store.cc", "#include \"store/store.h\"\n\n  #  include \"ingest/ingest.h\"\n");
  std::string out;
  EXPECT_EQ(Check(&out), 1);
  EXPECT_NE(out.find("src/store/store.cc:3: 'store' includes 'ingest/'"), std::string::npos) << out;
  EXPECT_NE(out.find("it may use: base, store"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "stamp"));
  // System headers and headers of the same folder are never back-edges.
  WriteFile(dir_ / "src/store/store.cc", "#include <ingest/whatever.h>\n#include \"store/store.h\"\n");
  EXPECT_EQ(Check(&out), 0) << out;
}

TEST_F(LayersTest, AFolderInNoStageIsRefused) {
  std::filesystem::create_directories(dir_ / "src/web");
  WriteFile(dir_ / "src/web/server.cc", "#include \"base/status.h\"\n");
  std::string out;
  EXPECT_EQ(Check(&out), 1);
  EXPECT_NE(out.find("src/web/server.cc: folder 'web' is in no stage"), std::string::npos) << out;
}

}  // namespace
}  // namespace tw::testing

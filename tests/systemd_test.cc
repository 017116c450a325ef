// systemd/trainwatch.service: systemd-analyze verifies it, its exposure score (systemd-analyze
// security) stays at 2.0 or below, and its syscall filter lets the diagnosis thread lower its
// priority. The exposure test skips where systemd-analyze is not installed (CI has it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "support/test_env.h"

namespace tw {
namespace {

using testing::ShellQuote;

using testing::ReadFile;
using testing::RunCommand;
using testing::TempDir;
using testing::WriteFile;
namespace fs = std::filesystem;

std::string SourceDir() {
  const fs::path from_file = fs::path(__FILE__).parent_path().parent_path();
  std::error_code ec;
  if (from_file.is_absolute() && fs::exists(from_file / "systemd", ec)) return from_file.native();
  std::string corpus = TW_CORPUS_DIR;
  const std::string suffix = "/../shared/corpus";
  if (corpus.ends_with(suffix)) corpus.resize(corpus.size() - suffix.size());
  return corpus;
}

bool HaveSystemdAnalyze() { return RunCommand("command -v systemd-analyze >/dev/null") == 0; }

// The unit, copied into `dir` with ExecStart pointing at the binary just built.
std::string UnitCopy(const TempDir& dir) {
  std::string unit = ReadFile(SourceDir() + "/systemd/trainwatch.service");
  const std::string installed = "/usr/local/bin/trainwatch";
  const size_t at = unit.find("ExecStart=" + installed);
  if (at == std::string::npos) return "";
  unit.replace(at + std::string("ExecStart=").size(), installed.size(),
               fs::absolute(TW_CLI_BINARY).native());
  const std::string path = dir / "trainwatch.service";
  WriteFile(path, unit);
  return path;
}

TEST(Systemd, UnitVerifiesAndScoresWellOnExposure) {
  if (!HaveSystemdAnalyze()) GTEST_SKIP() << "systemd-analyze is not installed";
  TempDir dir;
  const std::string unit = UnitCopy(dir);
  ASSERT_FALSE(unit.empty()) << "no ExecStart=/usr/local/bin/trainwatch in the unit";

  std::string out;
  const int verify = RunCommand("SYSTEMD_LOG_COLOR=0 systemd-analyze verify " + ShellQuote(unit), &out);
  EXPECT_EQ(verify, 0) << out;
  // Warnings about other units (the host's) are not ours; none may name this unit's file.
  EXPECT_EQ(out.find(unit + ":"), std::string::npos) << out;

  ASSERT_EQ(RunCommand("SYSTEMD_COLORS=0 systemd-analyze security --offline=yes " + ShellQuote(unit), &out),
            0)
      << out;
  const std::string key = "Overall exposure level for trainwatch.service: ";
  const size_t at = out.find(key);
  ASSERT_NE(at, std::string::npos) << out;
  const double exposure = std::strtod(out.c_str() + at + key.size(), nullptr);
  EXPECT_GT(exposure, 0.0) << out.substr(at);
  EXPECT_LE(exposure, 2.0) << out;
}

TEST(Systemd, UnitIsTypeNotifyAndDoesNotRestartOnConfigErrors) {
  const std::string unit = ReadFile(SourceDir() + "/systemd/trainwatch.service");
  auto has = [&](const std::string& line) {
    std::istringstream in(unit);
    for (std::string l; std::getline(in, l);)
      if (l == line) return true;
    return false;
  };
  EXPECT_TRUE(has("Type=notify"));
  EXPECT_TRUE(has("ExecReload=/bin/kill -HUP $MAINPID"));
  EXPECT_TRUE(has("RestartPreventExitStatus=78"));  // app::kExitConfig
  EXPECT_TRUE(has("RestartPreventExitStatus=65 73 75"));  // kExitCorrupt, kExitReadOnly, kExitBusy
  EXPECT_TRUE(has("StateDirectory=trainwatch"));
}

// Loopback only as shipped, so a configured channel cannot reach its receiver until a drop-in
// allows it: the unit checks each channel before the daemon starts (never failing the start)
// and ships the drop-in's example.
TEST(Systemd, UnitChecksEachChannelsReachBeforeStartAndShipsTheNetworkDropIn) {
  const std::string unit = ReadFile(SourceDir() + "/systemd/trainwatch.service");
  const std::string pre = "ExecStartPre=-/usr/local/bin/trainwatch notify check --config "
                          "${CONFIGURATION_DIRECTORY}/trainwatch.toml";
  EXPECT_NE(unit.find("\n" + pre + "\n"), std::string::npos) << "no ExecStartPre check, or one that can stop the start";
  EXPECT_NE(unit.find("\nIPAddressDeny=any\nIPAddressAllow=localhost\n"), std::string::npos);
  std::string out;
  EXPECT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " notify check --help 2>&1", &out), 0) << out;
  const std::string dropin = ReadFile(SourceDir() + "/systemd/network.conf");
  EXPECT_NE(dropin.find("\n[Service]\n"), std::string::npos);
  EXPECT_NE(dropin.find("#IPAddressAllow=any"), std::string::npos);
  EXPECT_NE(ReadFile(SourceDir() + "/CMakeLists.txt").find("install(FILES systemd/network.conf"), std::string::npos);
}

// The diagnosis thread's setpriority (src/app/diagnose_worker.cc) is in @resources, which the
// unit filters out: a later line must allow it back, and no capability may let it raise
// priority instead of lowering it.
TEST(Systemd, UnitLetsTheDiagnosisThreadLowerItsPriority) {
  const std::string unit = ReadFile(SourceDir() + "/systemd/trainwatch.service");
  std::istringstream in(unit);
  bool denied = false, allowed_after = false, no_caps = false;
  for (std::string l; std::getline(in, l);) {
    if (l.starts_with("SystemCallFilter=~") && l.find("@resources") != std::string::npos) denied = true;
    if (denied && l.starts_with("SystemCallFilter=") && !l.starts_with("SystemCallFilter=~") &&
        l.find("setpriority") != std::string::npos)
      allowed_after = true;
    if (l == "CapabilityBoundingSet=") no_caps = true;
  }
  EXPECT_TRUE(!denied || allowed_after) << "setpriority is filtered out with @resources\n" << unit;
  EXPECT_TRUE(no_caps) << unit;
}

}  // namespace
}  // namespace tw

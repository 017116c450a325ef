// The live daemon on W&B run directories: a real .wandb log written block by block (as the Go
// core flushes it) and a pre-0.10 run's JSON lines appended row by row, with a kill -9 in the
// middle, end with exactly the rows of a one-shot ingest of the final files.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <thread>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/daemon_process.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;


TEST(DaemonWandb, ALogWrittenBlockByBlockAndJsonLinesConvergeAcrossAKill) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "../shared/corpus not found";
  const std::string log_bytes = ReadFile(
      corpus + "/wandb-core-0.21/0Chris5R__StanfordCS336-Own-Transformer/wandb/"
               "run-20260120_015454-xinacahi/run-xinacahi.wandb");
  const std::string jsonl_bytes = ReadFile(
      corpus + "/wandb-legacy-0.8/AGKhalil__RL_implements/wandb/run-20200402_182553-z4nv4p4v/"
               "wandb-history.jsonl");
  ASSERT_GT(log_bytes.size(), 32768u * 10);

  TempDir dir;
  const std::string root = dir / "logs", db = dir / "daemon.db";
  const std::string log_path = root + "/wandb/run-20260120_015454-xinacahi/run-xinacahi.wandb";
  const std::string jsonl_path = root + "/wandb/run-20200402_182553-z4nv4p4v/wandb-history.jsonl";
  fs::create_directories(fs::path(log_path).parent_path());
  fs::create_directories(fs::path(jsonl_path).parent_path());
  WriteFile(log_path, "");
  WriteFile(jsonl_path, "");

  size_t log_at = 0, jsonl_at = 0;
  // Whole 32 KiB blocks, the first with 7 more bytes (the header), like the Go writer; every
  // third write stops mid-chunk. The JSON lines go a row and a half at a time.
  auto write_some = [&](int writes) {
    for (int i = 0; i < writes && (log_at < log_bytes.size() || jsonl_at < jsonl_bytes.size()); ++i) {
      size_t n = 32768 + (log_at == 0 ? 7 : 0) + (i % 3 == 2 ? 1001 : 0);
      n = std::min(n, log_bytes.size() - log_at);
      AppendFile(log_path, log_bytes.substr(log_at, n));
      log_at += n;
      size_t end = jsonl_bytes.find('\n', jsonl_at);
      end = end == std::string::npos ? jsonl_bytes.size() : std::min(jsonl_bytes.size(), end + 40);
      AppendFile(jsonl_path, jsonl_bytes.substr(jsonl_at, end - jsonl_at));
      jsonl_at = end;
      std::this_thread::sleep_for(20ms);
    }
  };

  {
    DaemonProcess daemon({"--logdir", root, "--db", db, "--rescan-interval", "0.3"}, dir / "d1.log");
    write_some(12);
    ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM scalars") > 0; }, 15s))
        << daemon.Log();
    daemon.KillAndReap();  // kill -9, whatever it was doing
  }
  write_some(5);  // grows while no daemon runs
  DaemonProcess daemon({"--logdir", root, "--db", db, "--rescan-interval", "0.3"}, dir / "d2.log");
  while (log_at < log_bytes.size() || jsonl_at < jsonl_bytes.size()) write_some(8);

  auto one = store::Store::Open(dir / "oneshot.db");
  ASSERT_TRUE(one.ok());
  ingest::Summary summary;
  ASSERT_TRUE(ingest::IngestPaths(**one, {root}, {}, &summary).ok());
  const auto want = DumpLiveScalars((*one)->db());
  ASSERT_GT(want.size(), 1000u);

  std::optional<std::vector<std::string>> got;
  const bool converged = WaitFor([&] { return (got = DumpLiveScalars(db)) && *got == want; }, 30s);
  ASSERT_TRUE(converged) << "live points: " << (got ? got->size() : 0) << " want " << want.size()
                         << "\n" << daemon.Log();
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM ingest_errors"), 0) << daemon.Log();
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM runs WHERE format = 'wandb'"), 2);
  EXPECT_EQ(QueryInt(db, "SELECT exit_code FROM runs WHERE external_id = 'xinacahi'"), 0);
  daemon.Signal(SIGTERM);
  EXPECT_TRUE(daemon.Wait(5s).has_value()) << daemon.Log();
}

}  // namespace
}  // namespace tw

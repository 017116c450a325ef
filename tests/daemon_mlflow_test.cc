// The daemon on MLflow's SQLite store, as a real process: mlflow.db under a logdir becomes one
// run per MLflow run, and rows MLflow adds later (a run whose loss turns NaN) reach diagnosis
// without a restart: the runs inside the database are handed to it like any file's run.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "store/db.h"
#include "support/daemon_process.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace std::chrono_literals;
using testing::DaemonProcess;
using testing::QueryInt;
using testing::TempDir;
using testing::WaitFor;
namespace fs = std::filesystem;

TEST(DaemonMlflow, RowsAddedToMlflowDbAreDiagnosedWhileWatched) {
  TempDir dir;
  const std::string db = dir / "tw.db";
  fs::create_directories(dir / "logs/tracking");
  const std::string mlflow = dir / "logs/tracking/mlflow.db";
  fs::copy_file(std::string(TW_SOURCES_DIR) + "/mlflow/mlflow.db", mlflow);
  testing::WriteFile(dir / "tw.toml",
                     "[store]\npath = \"" + db + "\"\n[watch]\nroots = [\"" + (dir / "logs") +
                         "\"]\nrescan_interval_seconds = 1\n[rules]\ninterval_seconds = 0.5\n");
  DaemonProcess d({"--config", dir / "tw.toml"}, dir / "daemon.log");
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, "SELECT count(*) FROM scalars") == 324; }, 15s)) << d.Log();
  const std::string healthy =
      "(SELECT run_id FROM runs WHERE name = 'tracking/mlflow.db/trainwatch-sources/adam-clusters-healthy')";
  const std::string nan_finding =
      "SELECT count(*) FROM findings WHERE rule = 'non_finite_loss' AND state = 'firing' AND run_id = " + healthy;
  // The diverging run's NaN is found; the healthy one has nothing.
  ASSERT_TRUE(WaitFor([&] {
    return QueryInt(db, "SELECT count(*) FROM findings f JOIN runs r USING (run_id) WHERE f.rule = "
                        "'non_finite_loss' AND r.name LIKE '%sgd-unscaled-diverge'") >= 1;
  }, 20s)) << d.Log();
  EXPECT_EQ(QueryInt(db, nan_finding), 0);

  // MLflow logs on into the healthy run: its loss turns NaN.
  {
    auto w = store::Db::Open(mlflow, store::Db::Mode::kReadWrite);
    ASSERT_TRUE(w.ok());
    std::string sql;
    for (int step = 100; step < 110; ++step)
      sql += "INSERT INTO metrics(key, value, timestamp, run_uuid, step, is_nan) VALUES ('loss', 0, " +
             std::to_string(1795742290000 + step) + ", 'c2354e2bb7744a6381d8fac168fb90d7', " +
             std::to_string(step) + ", 1);";
    ASSERT_TRUE((*w)->Exec(sql).ok());
  }
  ASSERT_TRUE(WaitFor([&] { return QueryInt(db, nan_finding) == 1; }, 20s)) << d.Log();
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM scalars"), 334);
}

}  // namespace
}  // namespace tw

// The store on a real SQLite file: migrations, refusing foreign databases, readers beside a
// writer, and what a full disk does to an ingest.
#include "store/store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "store/migrations.h"
#include "support/test_env.h"

namespace tw::store {
namespace {

using testing::TempDir;

int64_t One(Db& db, const std::string& sql) {
  auto st = db.Prepare(sql);
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  auto row = st->Step();
  EXPECT_TRUE(row.ok() && *row) << sql;
  return st->Int(0);
}

TEST(Store, CreatesSchemaAtLatestVersionInWalMode) {
  TempDir dir;
  auto s = Store::Open(dir / "t.db");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Db& db = (*s)->db();
  EXPECT_EQ(One(db, "PRAGMA user_version"), LatestSchemaVersion());
  auto mode = db.Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(*mode->Step());
  EXPECT_EQ(mode->Text(0), "wal");
  for (const char* view : {"scalar_points", "scalar_points_all", "histogram_points", "text_points",
                           "run_hparams", "run_summary"}) {
    EXPECT_EQ(One(db, std::string("SELECT count(*) FROM sqlite_master WHERE type='view' AND name='") +
                          view + "'"),
              1)
        << view;
  }
}

TEST(Store, ReopeningAppliesNothingTwice) {
  TempDir dir;
  { ASSERT_TRUE(Store::Open(dir / "t.db").ok()); }
  auto s = Store::Open(dir / "t.db");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(One((*s)->db(), "SELECT count(*) FROM meta"), 1);
}

TEST(Store, RefusesASqliteFileThatIsNotOurs) {
  TempDir dir;
  {
    auto db = Db::Open(dir / "other.db", Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("CREATE TABLE customers(id INTEGER)").ok());
  }
  auto s = Store::Open(dir / "other.db");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kNotOurs);
  EXPECT_NE(s.status().message().find("other.db"), std::string::npos);
  EXPECT_NE(s.status().message().find("not a trainwatch database"), std::string::npos);
  // And it was not touched.
  auto db = Db::Open(dir / "other.db", Db::Mode::kReadOnly);
  EXPECT_EQ(One(**db, "SELECT count(*) FROM sqlite_master"), 1);
  EXPECT_FALSE(OpenReadOnly(dir / "other.db").ok());
}

TEST(Store, RefusesAFileThatIsNotSqlite) {
  TempDir dir;
  testing::WriteFile(dir / "junk.db", std::string(4096, 'x'));
  auto s = Store::Open(dir / "junk.db");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("junk.db"), std::string::npos);
  auto ro = OpenReadOnly(dir / "junk.db");
  ASSERT_FALSE(ro.ok());
  EXPECT_EQ(ro.status().code(), Code::kNotOurs);
}

TEST(Store, RefusesANewerSchema) {
  TempDir dir;
  {
    auto s = Store::Open(dir / "t.db");
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->db().Exec("PRAGMA user_version = 999").ok());
  }
  auto s = Store::Open(dir / "t.db");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("newer"), std::string::npos) << s.status().message();
}

TEST(Store, ReadOnlyOpenOfAMissingFileSaysSo) {
  TempDir dir;
  auto db = OpenReadOnly(dir / "missing.db");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), Code::kNotFound);
  EXPECT_NE(db.status().message().find("missing.db"), std::string::npos);
}

TEST(Store, NanAndInfinitiesSurviveAndAreQueryable) {
  TempDir dir;
  auto s = Store::Open(dir / "t.db");
  ASSERT_TRUE(s.ok());
  Store& st = **s;
  ASSERT_TRUE(st.Begin().ok());
  auto run = st.EnsureRun("/root", "r");
  auto series = st.EnsureSeries(*run, "loss", "scalar", "", 0);
  SourceRow src;
  src.run_id = *run;
  src.path = "/root/r/f";
  auto sid = st.AddSource(src);
  const double vals[] = {1.5, std::numeric_limits<double>::quiet_NaN(),
                         std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity(), 0.0};
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(st.InsertScalar(*series, i, *sid, i * 10, 0, 100.0 + i, vals[i]).ok());
  ASSERT_TRUE(st.Commit().ok());

  auto q = st.db().Prepare("SELECT step, value, value_class FROM scalar_points ORDER BY step");
  ASSERT_TRUE(q.ok());
  const char* classes[] = {"finite", "nan", "+inf", "-inf", "finite"};
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(*q->Step());
    EXPECT_EQ(q->Int(0), i);
    EXPECT_EQ(q->Text(2), classes[i]);
    if (i == 1) {
      EXPECT_TRUE(q->IsNull(1));  // NaN reads back as NULL, told apart by value_class
    } else {
      EXPECT_FALSE(q->IsNull(1));
      EXPECT_EQ(q->Real(1), vals[i]);
    }
  }
  EXPECT_EQ(One(st.db(), "SELECT count(*) FROM scalar_points WHERE value IS NULL AND "
                         "value_class = 'finite'"),
            0);
  EXPECT_EQ(One(st.db(), "SELECT count(*) FROM scalar_points WHERE value = 9e999"), 1);
}

TEST(Store, ReaderSeesCommittedRowsWhileAWriteTransactionIsOpen) {
  TempDir dir;
  auto s = Store::Open(dir / "t.db");
  ASSERT_TRUE(s.ok());
  Store& st = **s;
  ASSERT_TRUE(st.Begin().ok());
  auto run = st.EnsureRun("/root", "r");
  ASSERT_TRUE(st.Commit().ok());

  ASSERT_TRUE(st.Begin().ok());
  ASSERT_TRUE(st.EnsureRun("/root", "uncommitted").ok());
  auto reader = OpenReadOnly(dir / "t.db");
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  // The reader is not blocked by the open write transaction and sees only committed rows.
  EXPECT_EQ(One(**reader, "SELECT count(*) FROM runs"), 1);
  ASSERT_TRUE(st.Commit().ok());
  EXPECT_EQ(One(**reader, "SELECT count(*) FROM runs"), 2);
}

}  // namespace
}  // namespace tw::store

// Failure paths of ingest: a store that runs out of space mid-ingest must keep exactly what
// it committed, and a later ingest must complete it without losing or doubling a point.
#include <gtest/gtest.h>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using testing::CorpusDir;
using testing::TempDir;

TEST(IngestFailure, DiskFullMidIngestLosesAndDoublesNothing) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "../shared/corpus not found";
  TempDir dir;
  auto reference = store::Store::Open(dir / "ref.db");
  ASSERT_TRUE(reference.ok());
  ingest::Summary ref_summary;
  ASSERT_TRUE(ingest::IngestPaths(**reference, {corpus}, {}, &ref_summary).ok());

  auto s = store::Store::Open(dir / "full.db");
  ASSERT_TRUE(s.ok());
  store::Store& st = **s;
  ingest::IngestOptions small_batches;
  small_batches.batch_points = 200;
  // Grow the allowed size step by step: every attempt but the last runs out of space
  // somewhere in the middle, as a filling disk would make it.
  int failures = 0;
  for (int pages = 60;; pages += 25) {
    ASSERT_TRUE(st.db().Exec("PRAGMA max_page_count = " + std::to_string(pages)).ok());
    ingest::Summary summary;
    Status result = ingest::IngestPaths(st, {corpus}, small_batches, &summary);
    if (result.ok()) break;
    ++failures;
    EXPECT_EQ(result.code(), Code::kIo) << result.ToString();
    EXPECT_NE(result.message().find("full"), std::string::npos) << result.message();
    ASSERT_LT(pages, 5000) << "never completed";
  }
  EXPECT_GE(failures, 3);
  EXPECT_EQ(testing::DumpStore(st.db()), testing::DumpStore((*reference)->db()));
  const char* errors = "SELECT count(*) || ' ' || group_concat(kind) FROM ingest_errors";
  auto a = st.db().Prepare(errors);
  auto b = (*reference)->db().Prepare(errors);
  ASSERT_TRUE(*a->Step() && *b->Step());
  EXPECT_EQ(a->Text(0), b->Text(0));  // each problem reported once, not once per attempt
}

// Every new source at once (console logs, HF trainer states, Lightning and YOLO tables, MLflow's
// file store and database, tests/data/sources): a store that keeps filling up loses and
// doubles nothing either.
TEST(IngestFailure, DiskFullMidIngestOfEverySourceKindLosesAndDoublesNothing) {
  const std::string sources = TW_SOURCES_DIR;
  ingest::IngestOptions options;
  options.console_globs = {sources + "/console/*.log"};
  TempDir dir;
  auto reference = store::Store::Open(dir / "ref.db");
  ASSERT_TRUE(reference.ok());
  ingest::Summary ref_summary;
  ASSERT_TRUE(ingest::IngestPaths(**reference, {sources}, options, &ref_summary).ok());
  ASSERT_GT(ref_summary.totals.scalars, 3000);
  ASSERT_GE(ref_summary.runs, 18);

  auto s = store::Store::Open(dir / "full.db");
  ASSERT_TRUE(s.ok());
  options.batch_points = 100;
  int failures = 0;
  for (int pages = 30;; pages += 15) {
    ASSERT_TRUE((*s)->db().Exec("PRAGMA max_page_count = " + std::to_string(pages)).ok());
    ingest::Summary summary;
    Status result = ingest::IngestPaths(**s, {sources}, options, &summary);
    if (result.ok()) break;
    ++failures;
    EXPECT_NE(result.message().find("full"), std::string::npos) << result.message();
    ASSERT_LT(pages, 5000) << "never completed";
  }
  EXPECT_GE(failures, 3);
  EXPECT_EQ(testing::DumpStore((*s)->db()), testing::DumpStore((*reference)->db()));
}

}  // namespace
}  // namespace tw

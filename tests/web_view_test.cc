// What the web view's pages are built on, over real HTTP to a port-0 loopback server and a store
// ingested from generated event files: the embedded pages and assets, a run's roles, marks and
// files, the runs list's sparklines, one finding by id (a notification's link), and the one
// write, a silence from the deliveries page. (The pages themselves, in Chromium:
// web_browser_test.cc.)
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>

#include "ingest/ingest.h"
#include "notify/outbox.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "support/test_env.h"
#include "support/web_client.h"
#include "web/server.h"

namespace tw {
namespace {

namespace json = boost::json;
using testing::TempDir;
using testing::WebGet;
using testing::WebRequest;

constexpr int64_t kNanStep = 230;
constexpr int64_t kRestartStep = 150;

// A run as a trainer writes one: train/loss (NaN from kNanStep), a step-decayed LR (x0.1 at 100
// and 200, a smooth warmup before), an epoch counter (every 60 steps), val/loss every 20 steps
// (best at step 120), and a restart that re-logs from kRestartStep.
void WriteSickRun(const std::string& dir) {
  testing::EventFileWriter w(dir + "/" + testing::EventFileName(1700000000, "host", 1, 0));
  w.Add(testing::FileVersionEvent(1.7e9));
  auto log = [&](int64_t s, bool second_pass) {
    const double t = 1.7e9 + s + (second_pass ? 1000 : 0);
    w.Add(testing::SimpleScalarEvent("train/loss", s, t, s >= kNanStep ? NAN : 2.0f / (1 + s * 0.01f)));
    const float warm = s < 10 ? 0.1f * (s + 1) / 10 : 0.1f;
    w.Add(testing::SimpleScalarEvent("lr", s, t, s >= 200 ? warm * 0.01f : s >= 100 ? warm * 0.1f : warm));
    w.Add(testing::SimpleScalarEvent("epoch", s, t, static_cast<float>(s / 60)));
    if (s % 20 == 0)
      w.Add(testing::SimpleScalarEvent("val/loss", s, t, 1.0f + std::abs(static_cast<float>(s) - 120) / 100));
  };
  for (int64_t s = 0; s < 180; ++s) log(s, false);
  for (int64_t s = kRestartStep; s < 260; ++s) log(s, true);
  w.Flush();
}

// A long run logged sparsely: a loss every 1,000 steps to step 999,000, NaN at kSparseNanStep.
constexpr int64_t kSparseNanStep = 777000;
void WriteLongRun(const std::string& dir) {
  testing::EventFileWriter w(dir + "/" + testing::EventFileName(1700000000, "host", 2, 0));
  w.Add(testing::FileVersionEvent(1.7e9));
  for (int64_t s = 0; s < 1000000; s += 1000)
    w.Add(testing::SimpleScalarEvent("loss", s, 1.7e9 + s, s == kSparseNanStep ? NAN : 1.0f + (s % 7000) * 1e-4f));
  w.Flush();
}

// A run logged at every step for 10,000 steps: an LR warming up over 100 steps, then 1e-3,
// stepped to 1e-4 at kDenseLrStep; an epoch every 3,000 steps. Longer than the marks' sampling
// (1,024 samples), so the marks come from seeks, and must still land on the exact steps.
constexpr int64_t kDenseLrStep = 6543;
void WriteDenseRun(const std::string& dir) {
  testing::EventFileWriter w(dir + "/" + testing::EventFileName(1700000000, "host", 3, 0));
  w.Add(testing::FileVersionEvent(1.7e9));
  for (int64_t s = 0; s < 10000; ++s) {
    const float lr = s < 100 ? 1e-3f * (s + 1) / 100 : s < kDenseLrStep ? 1e-3f : 1e-4f;
    w.Add(testing::SimpleScalarEvent("lr", s, 1.7e9 + s, lr));
    w.Add(testing::SimpleScalarEvent("epoch", s, 1.7e9 + s, static_cast<float>(s / 3000)));
  }
  w.Flush();
}

class WebViewTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string logs = *dir_ / "logs";
    WriteSickRun(logs + "/sick");
    WriteLongRun(logs + "/sparse");
    WriteDenseRun(logs + "/dense");
    auto store = store::Store::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ingest::Summary summary;
    ASSERT_TRUE(ingest::IngestPaths(**store, {logs}, {}, &summary).ok());
    store->reset();
    auto db = store::Db::Open(Db(), store::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec(R"(
      INSERT INTO findings(rule, run_id, series_id, severity, state, first_seen, last_seen, onset_step,
                           first_step, last_step, message, cause, fix, evidence)
        SELECT 'non_finite_loss', run_id, 0, 'critical', 'firing', 1.7e9, 1.7e9, 230, 230, 259,
               'train/loss is NaN', 'a cause', 'a fix', '{}' FROM runs WHERE name = 'sick';
      INSERT INTO finding_transitions(finding_id, time, from_state, to_state, severity, message)
        VALUES (1, 1.7e9, '', 'firing', 'critical', 'train/loss is NaN');
    )").ok());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Db() { return *dir_ / "tw.db"; }

  void SetUp() override {
    web::WebOptions o;
    o.port = 0;
    o.db_path = Db();
    ASSERT_TRUE(server_.Start(std::move(o)).ok());
  }
  uint16_t port() const { return server_.port(); }
  json::object RunNamed(const std::string& name) {
    const json::value runs = WebGet(port(), "/api/runs").Json();
    int64_t id = 0;
    for (const auto& r : runs.at("runs").as_array())
      if (r.at("name").as_string() == name) id = r.at("id").as_int64();
    return WebGet(port(), "/api/runs/" + std::to_string(id)).Json().as_object();
  }
  json::object SickRun() { return RunNamed("sick"); }

  static TempDir* dir_;
  web::WebServer server_;
};
TempDir* WebViewTest::dir_ = nullptr;

std::vector<int64_t> MarkSteps(const json::object& run, const std::string& kind) {
  std::vector<int64_t> out;
  for (const auto& m : run.at("markers").as_array())
    if (m.at("kind").as_string() == kind) out.push_back(m.at("step").as_int64());
  return out;
}

TEST_F(WebViewTest, PagesAndAssetsAreServedFromTheBinaryUnderAPolicyThatRunsOnlyOurScripts) {
  for (const std::string page : {"/", "/runs/1", "/findings", "/findings/7", "/deliveries", "/compare"}) {
    const auto r = WebGet(port(), page);
    ASSERT_EQ(r.status, 200u) << page;
    EXPECT_EQ(r.headers.at("content-type"), "text/html; charset=utf-8") << page;
    EXPECT_NE(r.body.find("/assets/app.js"), std::string::npos) << page;
    EXPECT_NE(r.headers.at("content-security-policy").find("script-src 'self'"), std::string::npos);
  }
  const auto uplot = WebGet(port(), "/assets/uPlot.iife.min.js");
  ASSERT_EQ(uplot.status, 200u);
  EXPECT_EQ(uplot.headers.at("content-type"), "text/javascript; charset=utf-8");
  EXPECT_NE(uplot.body.find("uPlot"), std::string::npos);
  EXPECT_EQ(WebGet(port(), "/assets/uPlot.LICENSE").status, 200u);
  // Revalidation: the same ETag answers 304 with no body.
  const auto again = WebGet(port(), "/assets/uPlot.iife.min.js", {{"If-None-Match", uplot.headers.at("etag")}});
  EXPECT_EQ(again.status, 304u);
  EXPECT_TRUE(again.body.empty());
  for (const std::string bad : {"/runs/x", "/runs/", "/assets/nope.js", "/index.html", "/findings/1/2"})
    EXPECT_EQ(WebGet(port(), bad).status, 404u) << bad;
}

TEST_F(WebViewTest, PagesNeedTheTokenToo) {
  server_.Stop();
  web::WebOptions o;
  o.port = 0;
  o.db_path = Db();
  o.token = "s3cret";
  ASSERT_TRUE(server_.Start(std::move(o)).ok());
  EXPECT_EQ(WebGet(port(), "/").status, 401u);
  EXPECT_EQ(WebGet(port(), "/assets/app.js").status, 401u);
  const auto link = WebGet(port(), "/?token=s3cret");
  EXPECT_EQ(link.status, 200u);
  EXPECT_NE(link.headers.at("set-cookie").find("tw_token=s3cret"), std::string::npos);
}

TEST_F(WebViewTest, ARunCarriesItsRolesAsDiagnosisInfersThem) {
  const json::object run = SickRun();
  std::map<std::string, std::string> roles;
  for (const auto& r : run.at("roles").as_array())
    roles[std::string(r.at("role").as_string())] = std::string(r.at("tag").as_string());
  EXPECT_EQ(roles["train_loss"], "train/loss");
  EXPECT_EQ(roles["val_loss"], "val/loss");
  EXPECT_EQ(roles["lr"], "lr");
  EXPECT_EQ(roles["epoch"], "epoch");
}

TEST_F(WebViewTest, MarksTheFirstNonFinitePointRestartsEpochsLrStepsAndTheBestValidationStep) {
  const json::object run = SickRun();
  EXPECT_EQ(MarkSteps(run, "nonfinite"), std::vector<int64_t>{kNanStep});
  EXPECT_EQ(MarkSteps(run, "restart"), std::vector<int64_t>{kRestartStep});
  EXPECT_EQ(MarkSteps(run, "epoch"), (std::vector<int64_t>{60, 120, 180, 240}));
  // The step decays, not the warmup's steps (each a big relative change, but a schedule).
  EXPECT_EQ(MarkSteps(run, "lr_change"), (std::vector<int64_t>{100, 200}));
  EXPECT_EQ(MarkSteps(run, "best_val"), std::vector<int64_t>{120});
}

TEST_F(WebViewTest, OnALongSeriesTheMarksComeFromSeeksAndLandOnTheExactSteps) {
  const json::object run = RunNamed("dense");
  EXPECT_EQ(MarkSteps(run, "lr_change"), std::vector<int64_t>{kDenseLrStep});
  EXPECT_EQ(MarkSteps(run, "epoch"), (std::vector<int64_t>{3000, 6000, 9000}));
}

TEST_F(WebViewTest, ARunListsItsFilesWithTheirReadState) {
  const json::object run = SickRun();
  const auto& files = run.at("files").as_array();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].at("status").as_string(), "active");
  EXPECT_EQ(files[0].at("committed_offset").as_int64(), files[0].at("size").as_int64());
  EXPECT_TRUE(files[0].at("recent_errors").as_array().empty());
}

TEST_F(WebViewTest, TheRunsListHasEachRunsLossAsASparklineThatKeepsItsNaN) {
  const json::value runs = WebGet(port(), "/api/runs").Json();
  const json::object* found = nullptr;
  for (const auto& r : runs.at("runs").as_array())
    if (r.at("name").as_string() == "sick") found = &r.as_object();
  ASSERT_NE(found, nullptr);
  const json::object& run = *found;
  EXPECT_EQ(run.at("rules").as_array(), json::array{"non_finite_loss"});
  const auto& line = run.at("sparkline").as_array();
  ASSERT_FALSE(line.empty());
  EXPECT_LE(line.size(), 4u * 48);
  bool nan = false;
  for (const auto& p : line) nan = nan || (p.as_array()[1].is_string() && p.as_array()[1].as_string() == "NaN");
  EXPECT_TRUE(nan);
  EXPECT_TRUE(runs.at("refresh_seconds").is_number());
}

// Past 100,000 steps the runs list samples a run's loss (index seeks, not a scan, at every
// refresh of the page) and still shows its first NaN.
TEST_F(WebViewTest, ALongRunsSparklineIsSampledAndKeepsItsFirstNaN) {
  const json::value runs = WebGet(port(), "/api/runs").Json();
  const json::object* sparse = nullptr;
  for (const auto& r : runs.at("runs").as_array())
    if (r.at("name").as_string() == "sparse") sparse = &r.as_object();
  ASSERT_NE(sparse, nullptr);
  const auto& line = sparse->at("sparkline").as_array();
  EXPECT_LE(line.size(), 4u * 48);
  EXPECT_GE(line.size(), 48u);
  bool nan = false;
  for (const auto& p : line)
    nan = nan || (p.as_array()[0].as_int64() == kSparseNanStep && p.as_array()[1] == json::value("NaN"));
  EXPECT_TRUE(nan) << json::serialize(line);
}

TEST_F(WebViewTest, OneFindingByIdWithItsTransitions) {
  const auto r = WebGet(port(), "/api/findings/1");
  ASSERT_EQ(r.status, 200u) << r.body;
  const json::object f = r.Json().at("finding").as_object();
  EXPECT_EQ(f.at("rule").as_string(), "non_finite_loss");
  ASSERT_EQ(f.at("transitions").as_array().size(), 1u);
  EXPECT_EQ(f.at("transitions").as_array()[0].at("to").as_string(), "firing");
  EXPECT_EQ(WebGet(port(), "/api/findings/999").status, 404u);
}

TEST_F(WebViewTest, ASilenceFromTheFormIsStoredAndHonoured) {
  const std::string body = R"({"run": "sick*", "rule": "non_finite_loss", "minutes": 90, "comment": "known"})";
  const auto r = WebRequest(port(), "POST", "/api/silences", {{"Content-Type", "application/json"}}, body);
  ASSERT_EQ(r.status, 201u) << r.body;
  auto db = store::OpenReadOnly(Db());
  ASSERT_TRUE(db.ok());
  const double now = r.Json().at("expires").to_number<double>() - 90 * 60;
  EXPECT_TRUE(*notify::Silenced(**db, "sick", "non_finite_loss", now + 60));
  EXPECT_FALSE(*notify::Silenced(**db, "sick", "non_finite_loss", now + 91 * 60));
  const json::value list = WebGet(port(), "/api/silences").Json();
  EXPECT_EQ(list.at("silences").as_array().at(0).at("comment").as_string(), "known");
  EXPECT_EQ(list.at("db").as_string(), Db());
}

TEST_F(WebViewTest, ASilenceFromAnotherSiteOrNotJsonOrMalformedIsRefused) {
  const std::string ok = R"({"run": "x", "minutes": 5})";
  // A form on another site cannot send JSON; a script there cannot pass the Origin check.
  EXPECT_EQ(WebRequest(port(), "POST", "/api/silences", {{"Content-Type", "application/x-www-form-urlencoded"}}, ok).status, 403u);
  EXPECT_EQ(WebRequest(port(), "POST", "/api/silences",
                       {{"Content-Type", "application/json"}, {"Origin", "http://evil.example"}}, ok).status, 403u);
  EXPECT_EQ(WebRequest(port(), "POST", "/api/silences",
                       {{"Content-Type", "application/json"}, {"Sec-Fetch-Site", "cross-site"}}, ok).status, 403u);
  EXPECT_EQ(WebRequest(port(), "POST", "/api/runs", {{"Content-Type", "application/json"}}, ok).status, 405u);
  const std::pair<std::string, std::string> bad[] = {
      {R"({"run": "", "minutes": 5})", "run"},
      {R"({"run": "x", "minutes": 0})", "minutes"},
      {R"({"run": "x", "minutes": 1e9})", "minutes"},
      {R"({"run": "x"})", "minutes"},
      {R"({"run": "x\ny", "minutes": 5})", "run"},
      {R"({"run": 3, "minutes": 5})", "run"},
      {R"({"run": "x", "minutes": 5, "until": 9})", "until"},
  };
  for (const auto& [body, param] : bad) {
    const auto r = WebRequest(port(), "POST", "/api/silences", {{"Content-Type", "application/json"}}, body);
    EXPECT_EQ(r.status, 400u) << body;
    EXPECT_EQ(r.Json().at("parameter").as_string(), param) << body << " " << r.body;
  }
  EXPECT_EQ(WebRequest(port(), "POST", "/api/silences", {{"Content-Type", "application/json"}}, "{not json").status, 400u);
  auto db = store::OpenReadOnly(Db());
  ASSERT_TRUE(db.ok());
  auto n = (*db)->Prepare("SELECT count(*) FROM silences WHERE run_glob = 'x'");
  ASSERT_TRUE(n.ok() && *n->Step());
  EXPECT_EQ(n->Int(0), 0);
}

}  // namespace
}  // namespace tw

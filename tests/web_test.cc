// The web view's server and JSON API (src/web, docs/web.md): real HTTP to a port-0 loopback
// server over a real store ingested from generated event files.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/test_env.h"
#include "support/web_client.h"
#include "web/downsample.h"
#include "web/server.h"

namespace tw {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using testing::TempDir;

constexpr int64_t kBigSteps = 100000;
constexpr int64_t kSpikeStep = 61234;
constexpr float kSpike = 1e6f;
constexpr const char* kHostileTag = "weird<script>\"";

using Reply = testing::WebReply;
using testing::WebGet;
// One GET on a fresh connection (support/web_client.h).
Reply Get(uint16_t port, const std::string& target, testing::WebHeaders headers = {}, const std::string& host = "") {
  return WebGet(port, target, headers, host);
}

void WriteRun(const std::string& dir, const std::vector<std::pair<std::string, std::function<float(int64_t)>>>& tags,
              int64_t steps) {
  testing::EventFileWriter w(dir + "/" + testing::EventFileName(1700000000, "host", 1, 0));
  w.Add(testing::FileVersionEvent(1.7e9));
  for (int64_t s = 0; s < steps; ++s)
    for (const auto& [tag, f] : tags) w.Add(testing::SimpleScalarEvent(tag, s, 1.7e9 + s * 0.01, f(s)));
  w.Flush();
}

// One store for the suite: a healthy run (with a hostile tag name and one superseded point), a
// run whose loss turns NaN (with stored findings), and a 100,000-point run with one spike.
class WebTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string logs = *dir_ / "logs";
    WriteRun(logs + "/healthy", {{"loss", [](int64_t s) { return 1.0f / (1 + s); }}, {kHostileTag, [](int64_t) { return 2.0f; }}}, 200);
    WriteRun(logs + "/diverged", {{"loss", [](int64_t s) { return s < 50 ? 1.0f : NAN; }}}, 100);
    WriteRun(logs + "/big", {{"loss", [](int64_t s) { return s == kSpikeStep ? kSpike : 1.0f + (s % 7) * 0.01f; }}}, kBigSteps);
    auto store = store::Store::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ingest::Summary summary;
    ASSERT_TRUE(ingest::IngestPaths(**store, {logs}, {}, &summary).ok());
    store->reset();

    auto db = store::Db::Open(Db(), store::Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec(R"(
      INSERT INTO scalars(series_id, step, source_id, offset, vidx, wall_time, value, value_class, superseded)
        SELECT s.series_id, 5, 1, 999999999, 0, 1.7e9, 123.5, 0, 1 FROM series s JOIN runs r USING (run_id)
        WHERE r.name = 'healthy' AND s.tag = 'loss';
      INSERT INTO findings(rule, run_id, series_id, severity, state, first_seen, last_seen, onset_step,
                           first_step, last_step, message, cause, fix, evidence)
        SELECT 'nan_loss', run_id, 0, 'critical', 'firing', 1.7e9, 1.7e9, 50, 50, 99,
               'loss is NaN <b>"from step 50"</b>', 'a cause', 'a fix', '{"n":1}' FROM runs WHERE name = 'diverged';
      INSERT INTO findings(rule, run_id, series_id, severity, state, first_seen, last_seen, message, evidence)
        SELECT 'run_verdict', run_id, 0, 'info', 'firing', 1.7e9, 1.7e9, 'kill: nan_loss', '{"verdict":"kill"}'
        FROM runs WHERE name = 'diverged';
      INSERT INTO findings(rule, run_id, series_id, severity, state, first_seen, last_seen, message)
        SELECT 'plateau', run_id, 0, 'warning', 'resolved', 1.7e9, 1.7e9, 'was flat' FROM runs WHERE name = 'healthy';
    )").ok());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Db() { return *dir_ / "tw.db"; }

  web::WebOptions Options() const {
    web::WebOptions o;
    o.port = 0;
    o.db_path = Db();
    return o;
  }
  void StartServer(web::WebOptions o) { ASSERT_TRUE(server_.Start(std::move(o)).ok()); }
  void StartServer() { StartServer(Options()); }
  uint16_t port() const { return server_.port(); }

  // The id of run `name`'s series `tag`, through the API.
  int64_t SeriesId(const std::string& run, const std::string& tag) {
    const json::value runs = Get(port(), "/api/runs").Json();
    for (const auto& r : runs.at("runs").as_array()) {
      if (r.at("name").as_string() != run) continue;
      const json::value detail = Get(port(), "/api/runs/" + std::to_string(r.at("id").as_int64())).Json();
      for (const auto& s : detail.at("series").as_array())
        if (s.at("tag").as_string() == tag) return s.at("id").as_int64();
    }
    ADD_FAILURE() << "no series " << run << "/" << tag;
    return -1;
  }

  static TempDir* dir_;
  web::WebServer server_;
};
TempDir* WebTest::dir_ = nullptr;

TEST(WebM4, KeepsFirstLastLowHighAtMostFourPerBucket) {
  web::M4 m4(0, 999, 10);
  for (int64_t s = 0; s < 1000; ++s) m4.Add({s, 0, s == 555 ? -50.0 : s == 556 ? 50.0 : 1.0, 0, false});
  const auto out = m4.Finish();
  EXPECT_LE(out.size(), 40u);
  bool low = false, high = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (i) {
      EXPECT_LE(out[i - 1].step, out[i].step);
    }
    low |= out[i].value == -50.0;
    high |= out[i].value == 50.0;
  }
  EXPECT_TRUE(low && high);
}

TEST_F(WebTest, RunsComeKillFirstWithTheirFacts) {
  StartServer();
  const Reply r = Get(port(), "/api/runs");
  ASSERT_EQ(r.status, 200u) << r.body;
  const json::value v = r.Json();
  const auto& runs = v.at("runs").as_array();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].at("name").as_string(), "diverged");
  EXPECT_EQ(runs[0].at("verdict").as_string(), "kill");
  EXPECT_EQ(runs[0].at("firing").as_int64(), 1);
  EXPECT_EQ(runs[1].at("verdict").as_string(), "healthy");
  for (const auto& run : runs) {
    EXPECT_EQ(run.at("format").as_string(), "tensorboard");
    EXPECT_FALSE(run.at("live").as_bool());  // written in 2023
  }
  EXPECT_EQ(runs[1].at("name").as_string(), "big");
  EXPECT_EQ(runs[1].at("last_step").as_int64(), kBigSteps - 1);
}

TEST_F(WebTest, SeriesKeepsAOneStepSpikeWithinFourPointsPerPixel) {
  StartServer();
  const Reply r = Get(port(), "/api/series/" + std::to_string(SeriesId("big", "loss")) + "?width=200");
  ASSERT_EQ(r.status, 200u) << r.body;
  const json::value v = r.Json();
  EXPECT_TRUE(v.at("downsampled").as_bool());
  EXPECT_EQ(v.at("total").as_int64(), kBigSteps);
  const auto& points = v.at("points").as_array();
  EXPECT_LE(points.size(), 4u * 200);
  EXPECT_GE(points.size(), 200u);
  bool spike = false;
  for (const auto& p : points)
    if (p.at("value").is_double() && p.at("value").as_double() == kSpike) spike = p.at("step").as_int64() == kSpikeStep;
  EXPECT_TRUE(spike) << "the one-step spike vanished";
}

TEST_F(WebTest, NanAndRangeAndSuperseded) {
  StartServer();
  const Reply nan = Get(port(), "/api/series/" + std::to_string(SeriesId("diverged", "loss")) + "?from=45&to=55");
  ASSERT_EQ(nan.status, 200u) << nan.body;
  const json::value v = nan.Json();
  const auto& points = v.at("points").as_array();
  ASSERT_EQ(points.size(), 11u);
  EXPECT_EQ(points[4].at("value").as_double(), 1.0);
  EXPECT_EQ(points[5].at("value").as_string(), "NaN");

  const std::string healthy = "/api/series/" + std::to_string(SeriesId("healthy", "loss"));
  const auto live = Get(port(), healthy + "?from=5&to=5").Json().at("points").as_array();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_FALSE(live[0].as_object().contains("superseded"));
  const auto all = Get(port(), healthy + "?from=5&to=5&superseded=1").Json().at("points").as_array();
  ASSERT_EQ(all.size(), 2u);
  int flagged = 0;
  for (const auto& p : all)
    if (p.at("superseded").as_bool()) flagged += p.at("value").as_double() == 123.5;
  EXPECT_EQ(flagged, 1);
}

TEST_F(WebTest, HostileNamesComeBackEncoded) {
  StartServer();
  const int64_t id = SeriesId("healthy", kHostileTag);
  ASSERT_GT(id, 0);
  const Reply r = Get(port(), "/api/series/" + std::to_string(id) + "?width=10");
  EXPECT_EQ(r.Json().at("tag").as_string(), kHostileTag);
  EXPECT_EQ(r.body.find("<script>\""), std::string::npos) << "the quote went out raw: " << r.body;
  const Reply f = Get(port(), "/api/findings");
  EXPECT_EQ(f.Json().at("findings").as_array()[0].at("message").as_string(), "loss is NaN <b>\"from step 50\"</b>");
  EXPECT_EQ(r.headers.at("content-type"), "application/json; charset=utf-8");
  EXPECT_EQ(r.headers.at("x-content-type-options"), "nosniff");
  EXPECT_EQ(r.headers.at("cache-control"), "no-store");
}

TEST_F(WebTest, FindingsByStateAndTheOutbox) {
  StartServer();
  const auto firing = Get(port(), "/api/findings").Json().at("findings").as_array();
  ASSERT_EQ(firing.size(), 2u);  // nan_loss and the run verdict
  for (const auto& f : firing) EXPECT_EQ(f.at("state").as_string(), "firing");
  const auto resolved = Get(port(), "/api/findings?state=resolved").Json().at("findings").as_array();
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].at("rule").as_string(), "plateau");
  EXPECT_EQ(Get(port(), "/api/findings?state=all").Json().at("findings").as_array().size(), 3u);
  const json::value outbox = Get(port(), "/api/outbox").Json();
  EXPECT_TRUE(outbox.at("channels").is_array());
  EXPECT_TRUE(outbox.at("waiting").is_array());
}

TEST_F(WebTest, UnknownPathsAndBadParameters) {
  StartServer();
  EXPECT_EQ(Get(port(), "/api/nothing").status, 404u);
  EXPECT_EQ(Get(port(), "/elsewhere").status, 404u);
  EXPECT_EQ(Get(port(), "/api/series/99999").status, 404u);
  EXPECT_EQ(Get(port(), "/api/runs/99999").status, 404u);
  const std::string series = "/api/series/" + std::to_string(SeriesId("big", "loss"));
  for (const auto& [target, param] : std::vector<std::pair<std::string, std::string>>{
           {"/api/series/abc", "id"},
           {series + "?width=0", "width"},
           {series + "?width=ten", "width"},
           {series + "?from=9&to=1", "from"},
           {series + "?superseded=2", "superseded"},
           {"/api/findings?state=bogus", "state"}}) {
    const Reply r = Get(port(), target);
    EXPECT_EQ(r.status, 400u) << target;
    EXPECT_EQ(r.Json().at("parameter").as_string(), param) << target;
  }
}

TEST_F(WebTest, NoTokenNoListeningBeyondLoopback) {
  web::WebOptions o = Options();
  o.address = "0.0.0.0";
  const Status s = server_.Start(o);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("token"), std::string::npos) << s.message();
}

TEST_F(WebTest, LoopbackWithoutTokenWantsALoopbackHost) {
  StartServer();
  EXPECT_EQ(Get(port(), "/api/runs", {}, "localhost:" + std::to_string(port())).status, 200u);
  EXPECT_EQ(Get(port(), "/api/runs", {}, "rebound.example:" + std::to_string(port())).status, 403u);
}

TEST_F(WebTest, TokenByBearerOrLinkThenCookie) {
  web::WebOptions o = Options();
  o.token = "s3cret-token";
  StartServer(o);
  EXPECT_EQ(Get(port(), "/api/runs").status, 401u);
  EXPECT_EQ(Get(port(), "/api/runs", {{"Authorization", "Bearer wrong"}}).status, 401u);
  EXPECT_EQ(Get(port(), "/api/runs", {{"Authorization", "Bearer s3cret-token"}}).status, 200u);
  EXPECT_EQ(Get(port(), "/api/runs?token=s3cret-tokeN").status, 401u);
  const Reply link = Get(port(), "/api/runs?token=s3cret-token");
  ASSERT_EQ(link.status, 200u);
  const std::string cookie = link.headers.at("set-cookie");
  EXPECT_EQ(cookie.rfind("tw_token=s3cret-token;", 0), 0u) << cookie;
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos);
  EXPECT_EQ(Get(port(), "/api/runs", {{"Cookie", "a=b; tw_token=s3cret-token"}}).status, 200u);
  EXPECT_EQ(Get(port(), "/api/runs", {{"Cookie", "tw_token=s3cret-toke"}}).status, 401u);
}

TEST_F(WebTest, RequestsOverTheCapAnswer503) {
  std::mutex m;
  std::condition_variable cv;
  int admitted = 0;
  bool release = false;
  web::WebOptions o = Options();
  o.max_concurrent = 2;
  o.on_admitted = [&] {
    std::unique_lock lock(m);
    ++admitted;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  StartServer(o);
  std::vector<std::thread> held;
  std::vector<unsigned> held_status(2);
  // Releases the held requests however the test ends, so the server can stop.
  struct Releaser {
    std::function<void()> f;
    ~Releaser() { f(); }
  } releaser{[&] {
    {
      std::lock_guard lock(m);
      release = true;
    }
    cv.notify_all();
    for (auto& t : held)
      if (t.joinable()) t.join();
  }};
  for (int i = 0; i < 2; ++i)
    held.emplace_back([&, i] {
      try {
        held_status[i] = Get(port(), "/api/runs").status;
      } catch (const std::exception&) {
      }
    });
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return admitted == 2; }));
  }
  const Reply over = Get(port(), "/api/runs");
  EXPECT_EQ(over.status, 503u);
  releaser.f();
  EXPECT_EQ(held_status, (std::vector<unsigned>{200, 200}));
  EXPECT_EQ(Get(port(), "/api/runs").status, 200u);
}

TEST_F(WebTest, ARequestPastItsTimeLimitAnswers503) {
  StartServer();
  const std::string target = "/api/series/" + std::to_string(SeriesId("big", "loss")) + "?width=200";
  server_.Stop();
  web::WebOptions o = Options();
  o.time_limit = std::chrono::milliseconds(0);  // any query past its first progress check
  StartServer(o);
  const Reply r = Get(port(), target);
  EXPECT_EQ(r.status, 503u) << r.body;
  EXPECT_NE(r.body.find("time limit"), std::string::npos) << r.body;
}

// The daemon serves the web view beside its work (--web, or [web] listen), on its own store,
// with the findings it made.
TEST(WebDaemon, TheDaemonServesItsStoreAndFindingsAtWeb) {
  TempDir dir;
  WriteRun(dir / "logs/diverged", {{"loss", [](int64_t s) { return s < 50 ? 1.0f : NAN; }}}, 100);
  testing::DaemonProcess d({"--logdir", dir / "logs", "--db", dir / "tw.db", "--rescan-interval", "1",
                            "--web", "127.0.0.1:0"},
                           dir / "daemon.log");
  const std::string said = "web view: http://127.0.0.1:";
  ASSERT_TRUE(d.WaitForLog(said, std::chrono::seconds(10))) << d.Log();
  const std::string log = d.Log();
  const uint16_t port = static_cast<uint16_t>(std::stoi(log.substr(log.find(said) + said.size())));
  bool killed = false;
  for (int i = 0; i < 200 && !killed; ++i) {  // until diagnosis has judged the run
    const json::value runs = Get(port, "/api/runs").Json();
    for (const auto& r : runs.at("runs").as_array())
      if (r.at("name") == "diverged" && r.at("verdict") == "kill") killed = true;
    if (!killed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(killed) << d.Log();
  const json::value findings = Get(port, "/api/findings").Json();
  EXPECT_NE(json::serialize(findings).find("non_finite_loss"), std::string::npos) << json::serialize(findings);
  ASSERT_EQ(d.Stop(std::chrono::seconds(10)), std::optional<int>(0)) << d.Log();
}

TEST(WebDaemon, BeyondLoopbackWithoutATokenTheDaemonRefusesToStart) {
  TempDir dir;
  testing::DaemonProcess d({"--logdir", dir / "logs", "--db", dir / "tw.db", "--web", "0.0.0.0:0"},
                           dir / "daemon.log");
  const std::optional<int> status = d.Wait(std::chrono::seconds(10));
  ASSERT_TRUE(status.has_value()) << d.Log();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 78) << d.Log();
  EXPECT_NE(d.Log().find("token"), std::string::npos) << d.Log();
}

}  // namespace
}  // namespace tw

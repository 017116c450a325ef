// The web view's pages (src/web/assets, docs/web.md) in a real headless Chromium
// (support/browser.h): no errors on any page, the runs in attention order, the NaN run's curve
// drawn with its marker and finding, a one-step spike among 100,000 points on the canvas, and
// hostile tag and run names shown as text. Pages say they are done by setting
// document.body.dataset.ready = "1".
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <memory>

#include "ingest/ingest.h"
#include "store/store.h"
#include "support/browser_suite.h"
#include "support/event_writer.h"
#include "support/example_view.h"
#include "support/test_env.h"
#include "web/server.h"

namespace tw::testing {
namespace {

using Ms = std::chrono::milliseconds;
namespace json = boost::json;

constexpr Ms kReady(20000);
constexpr const char* kReadyJs = "document.body.dataset.ready === '1'";

std::string Quote(const std::string& s) { return json::serialize(json::value(s)); }

// Loads `path` of the view at `base` and waits for the page to say it is ready.
void Open(Browser& b, const std::string& base, const std::string& path) {
  b.Navigate(base + path);
  b.WaitFor(kReadyJs, kReady);
  b.Evaluate("1");  // a round trip, so events sent before it have been read
}

// JavaScript helpers over the run page's charts (window.tw.charts: {role, plot} with uPlot's
// plot), installed into the page before use.
constexpr const char* kChartJs = R"JS(
window.twTest = {
  // [r, g, b] of a CSS colour.
  rgb(color) {
    const c = document.createElement('canvas'); c.width = c.height = 1;
    const g = c.getContext('2d'); g.fillStyle = color; g.fillRect(0, 0, 1, 1);
    return Array.from(g.getImageData(0, 0, 1, 1).data).slice(0, 3);
  },
  stroke(plot, i) { const s = plot.series[i].stroke; return typeof s === 'function' ? s(plot, i) : s; },
  // Pixels of plot's canvas in [x0, x1) x [y0, y1) (canvas pixels) drawn in series i's colour.
  count(plot, i, x0, x1, y0, y1) {
    const [r, g, b] = this.rgb(this.stroke(plot, i));
    x0 = Math.max(0, Math.floor(x0)); y0 = Math.max(0, Math.floor(y0));
    const w = Math.max(1, Math.ceil(x1) - x0), h = Math.max(1, Math.ceil(y1) - y0);
    const d = plot.ctx.getImageData(x0, y0, w, h).data;
    let n = 0;
    for (let k = 0; k < d.length; k += 4)
      if (d[k + 3] > 64 && Math.abs(d[k] - r) < 48 && Math.abs(d[k + 1] - g) < 48 && Math.abs(d[k + 2] - b) < 48) ++n;
    return n;
  },
  // The chart and series index whose plotted data hold `value` at step `step`, or null.
  find(step, value) {
    for (const c of window.tw.charts || []) {
      const xs = c.plot.data[0];
      for (let i = 1; i < c.plot.data.length; ++i)
        for (let k = 0; k < xs.length; ++k)
          if (xs[k] === step && c.plot.data[i][k] === value) return {chart: c, series: i};
    }
    return null;
  },
};
true
)JS";

// --- the bundled example under a real daemon ---------------------------------------------

class WebPagesExample : public BrowserSuite {
 protected:
  static void SetUpTestSuite() {
    BrowserSuite::SetUpTestSuite();
    if (!browser_) return;
    try {
      dir_ = std::make_unique<TempDir>();
      view_ = std::make_unique<ExampleView>(dir_->path(), TW_EXAMPLE_BINARY);
      view_->WaitDiagnosed(*browser_);
    } catch (const std::exception& e) {
      start_error_ = std::string("the example daemon: ") + e.what();
      browser_.reset();
    }
  }
  static void TearDownTestSuite() {
    view_.reset();
    dir_.reset();
    BrowserSuite::TearDownTestSuite();
  }
  // The API's runs (through the browser, from a page of the view).
  static json::array ApiRuns() {
    browser().Navigate(view_->url("/api/runs"));
    return FetchJson(browser(), "/api/runs").at("runs").as_array();
  }
  static int64_t RunId(const std::string& name) {
    for (const auto& r : ApiRuns())
      if (r.at("name").as_string() == name) return r.at("id").as_int64();
    ADD_FAILURE() << "no run " << name;
    return -1;
  }

  static inline std::unique_ptr<TempDir> dir_;
  static inline std::unique_ptr<ExampleView> view_;
};

TEST_F(WebPagesExample, EveryPageLoadsWithoutErrors) {
  const json::array runs = ApiRuns();
  ASSERT_GE(runs.size(), 2u);
  const std::string a = std::to_string(runs[0].at("id").as_int64()), b = std::to_string(runs[1].at("id").as_int64());
  std::vector<std::string> paths = {"/", "/findings", "/deliveries", "/compare?runs=" + a + "," + b + "&role=train_loss"};
  for (const auto& r : runs) paths.push_back("/runs/" + std::to_string(r.at("id").as_int64()));
  for (const auto& path : paths) {
    SCOPED_TRACE(path);
    browser().ClearErrors();
    Open(browser(), view_->url(""), path);
    EXPECT_TRUE(browser().errors().empty() && browser().dialogs().empty()) << browser().ErrorReport();
  }
}

TEST_F(WebPagesExample, RunsAreListedKillThenWatchThenHealthy) {
  std::map<int64_t, std::string> verdicts;  // the daemon's, by run id
  for (const auto& r : ApiRuns()) verdicts[r.at("id").as_int64()] = std::string(r.at("verdict").as_string());
  Open(browser(), view_->url(""), "/");
  const json::value rows = browser().Evaluate(
      "Array.from(document.querySelectorAll('#runs tbody tr[data-run-id]')).map(tr => ({id: +tr.dataset.runId, "
      "verdict: tr.dataset.verdict, name: tr.querySelector('.run-name').textContent}))");
  const std::map<std::string, int> rank = {{"kill", 0}, {"watch", 1}, {"healthy", 2}};
  ASSERT_EQ(rows.as_array().size(), verdicts.size()) << json::serialize(rows);
  int last = 0;
  std::set<std::string> seen;
  for (const auto& row : rows.as_array()) {
    const std::string verdict(row.at("verdict").as_string());
    ASSERT_TRUE(rank.contains(verdict)) << json::serialize(row);
    EXPECT_EQ(verdict, verdicts[row.at("id").to_number<int64_t>()]) << json::serialize(row);
    EXPECT_GE(rank.at(verdict), last) << "out of attention order: " << json::serialize(rows);
    last = rank.at(verdict);
    seen.insert(verdict);
  }
  // The name cell starts with the run's name (its root follows).
  EXPECT_TRUE(rows.as_array()[0].at("name").as_string().starts_with("bert-finetune-diverged")) << json::serialize(rows);
  EXPECT_TRUE(seen.contains("kill") && seen.contains("healthy")) << json::serialize(rows);
}

TEST_F(WebPagesExample, TheNanRunDrawsItsCurveAndShowsTheNonfiniteMarkerAndFinding) {
  const int64_t id = RunId("bert-finetune-diverged");
  Open(browser(), view_->url(""), "/runs/" + std::to_string(id));
  ASSERT_TRUE(browser().Evaluate(kChartJs).as_bool());
  // The loss chart's canvas has its curve's colour inside the plot area.
  const json::value drawn = browser().Evaluate(R"JS((() => {
    const c = (window.tw.charts || []).find(c => c.role === 'train_loss');
    if (!c) return {error: 'no train_loss chart: ' + JSON.stringify((window.tw.charts || []).map(c => c.role))};
    const b = c.plot.bbox;
    return {
      canvas: !!document.querySelector('.chart[data-role=train_loss] canvas'),
      pixels: twTest.count(c.plot, 1, b.left, b.left + b.width, b.top, b.top + b.height),
    };
  })())JS");
  ASSERT_FALSE(drawn.as_object().contains("error")) << json::serialize(drawn);
  EXPECT_TRUE(drawn.at("canvas").as_bool());
  EXPECT_GT(drawn.at("pixels").to_number<int64_t>(), 50) << "the loss curve was not drawn";

  const json::value marker = browser().Evaluate(
      "Array.from(document.querySelectorAll('#markers li[data-marker=nonfinite]')).map(li => +li.dataset.step)");
  ASSERT_FALSE(marker.as_array().empty()) << "no nonfinite marker";
  // One of them (a series each) at the first non-finite loss, where the finding says it began.
  const json::value findings = FetchJson(browser(), "/api/findings");
  int64_t onset = -1;
  for (const auto& f : findings.at("findings").as_array())
    if (f.at("rule") == "non_finite_loss" && f.at("run_id").as_int64() == id) onset = f.at("onset_step").as_int64();
  bool at_onset = false;
  for (const auto& step : marker.as_array()) at_onset |= step.to_number<int64_t>() == onset;
  EXPECT_TRUE(at_onset) << "markers at " << json::serialize(marker) << "; non_finite_loss from step " << onset;

  EXPECT_TRUE(browser().Evaluate("!!document.querySelector('#findings li[data-rule=non_finite_loss]')").as_bool())
      << browser().Evaluate("document.querySelector('#findings') && document.querySelector('#findings').outerHTML");
}

// --- a store the test fills, under a WebServer ---------------------------------------------

constexpr int64_t kBigSteps = 100000;
constexpr int64_t kSpikeStep = 61234;
constexpr float kSpike = 1e6f;
const std::string kScriptTag = "<script>alert(1)</script>";
const std::string kImgTag = "<img src=x onerror=alert(2)>";
const std::string kImgRun = "<img src=x onerror=alert(3)>";

void WriteRun(const std::string& dir, const std::vector<std::pair<std::string, std::function<float(int64_t)>>>& tags,
              int64_t steps) {
  EventFileWriter w(dir + "/" + EventFileName(1700000000, "host", 1, 0));
  w.Add(FileVersionEvent(1.7e9));
  for (int64_t s = 0; s < steps; ++s)
    for (const auto& [tag, f] : tags) w.Add(SimpleScalarEvent(tag, s, 1.7e9 + s * 0.01, f(s)));
  w.Flush();
}

class WebPagesStore : public BrowserSuite {
 protected:
  static void SetUpTestSuite() {
    BrowserSuite::SetUpTestSuite();
    dir_ = std::make_unique<TempDir>();
    const std::string logs = *dir_ / "logs";
    WriteRun(logs + "/big", {{"loss", [](int64_t s) { return s == kSpikeStep ? kSpike : 1.0f + (s % 7) * 0.01f; }}},
             kBigSteps);
    WriteRun(logs + "/" + kImgRun,
             {{"loss", [](int64_t s) { return 1.0f / (1 + s); }},
              {kScriptTag, [](int64_t) { return 2.0f; }},
              {kImgTag, [](int64_t s) { return float(s); }}},
             50);
    const std::string db = *dir_ / "tw.db";
    auto store = store::Store::Open(db);
    ASSERT_TRUE(store.ok()) << store.status().message();
    ingest::Summary summary;
    ASSERT_TRUE(ingest::IngestPaths(**store, {logs}, {}, &summary).ok());
    store->reset();
    server_ = std::make_unique<web::WebServer>();
    web::WebOptions o;
    o.port = 0;
    o.db_path = db;
    const Status st = server_->Start(o);
    ASSERT_TRUE(st.ok()) << st.message();
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  static void TearDownTestSuite() {
    server_.reset();
    dir_.reset();
    BrowserSuite::TearDownTestSuite();
  }
  static int64_t RunId(const std::string& name) {
    browser().Navigate(base_ + "/api/runs");
    const json::value runs = FetchJson(browser(), "/api/runs");
    for (const auto& r : runs.at("runs").as_array())
      if (r.at("name").as_string() == name) return r.at("id").as_int64();
    ADD_FAILURE() << "no run " << name;
    return -1;
  }

  static inline std::unique_ptr<TempDir> dir_;
  static inline std::unique_ptr<web::WebServer> server_;
  static inline std::string base_;
};

TEST_F(WebPagesStore, AOneStepSpikeAmong100000PointsReachesTheCanvas) {
  Open(browser(), base_, "/runs/" + std::to_string(RunId("big")));
  EXPECT_TRUE(browser().errors().empty()) << browser().ErrorReport();
  ASSERT_TRUE(browser().Evaluate(kChartJs).as_bool());
  const json::value v = browser().Evaluate("(() => {"
                                           "  const f = twTest.find(" + std::to_string(kSpikeStep) + ", " +
                                           std::to_string(kSpike) + ");"
                                           "  if (!f) return {found: false, points: (window.tw.charts || []).map(c => c.plot.data[0].length)};"
                                           "  const p = f.chart.plot, b = p.bbox, band = b.height / 5;"
                                           "  const x = p.valToPos(" + std::to_string(kSpikeStep) + ", 'x', true);"
                                           "  const away = p.valToPos(20000, 'x', true);"
                                           "  return {found: true, points: p.data[0].length, band: band,"
                                           "    spike: twTest.count(p, f.series, x - 3, x + 4, b.top, b.top + band),"
                                           "    away: twTest.count(p, f.series, away - 3, away + 4, b.top, b.top + band)};"
                                           "})()");
  ASSERT_TRUE(v.at("found").as_bool()) << "the plotted data lost the spike: " << json::serialize(v);
  EXPECT_LT(v.at("points").to_number<int64_t>(), kBigSteps) << "not downsampled: " << json::serialize(v);
  // The spike's line crosses the top fifth of the plot area in its column; 20,000 steps away
  // the curve stays at the bottom.
  EXPECT_GE(v.at("spike").to_number<double>(), v.at("band").to_number<double>() / 2) << json::serialize(v);
  EXPECT_LE(v.at("away").to_number<double>(), 2) << json::serialize(v);
}

TEST_F(WebPagesStore, HostileTagAndRunNamesAreShownAsText) {
  const int64_t id = RunId(kImgRun);
  for (const std::string& path : {std::string("/"), "/runs/" + std::to_string(id), std::string("/findings")}) {
    SCOPED_TRACE(path);
    browser().ClearErrors();
    Open(browser(), base_, path);
    EXPECT_TRUE(browser().dialogs().empty()) << browser().ErrorReport();
    EXPECT_TRUE(browser().errors().empty()) << browser().ErrorReport();
    // Nothing was injected: no image with src=x, no script but the page's own.
    EXPECT_EQ(browser().Evaluate("document.querySelectorAll('img[src=x]').length").as_int64(), 0);
    EXPECT_EQ(browser().Evaluate("Array.from(document.scripts).filter(s => s.textContent.includes('alert(')).length")
                  .as_int64(),
              0);
    const std::string text = "document.body.textContent";
    if (path != "/findings") {
      EXPECT_TRUE(browser().Evaluate(text + ".includes(" + Quote(kImgRun) + ")").as_bool()) << "the run's name is not shown";
    }
    if (path.starts_with("/runs/")) {
      EXPECT_TRUE(browser().Evaluate(text + ".includes(" + Quote(kScriptTag) + ")").as_bool());
      EXPECT_TRUE(browser().Evaluate(text + ".includes(" + Quote(kImgTag) + ")").as_bool());
    }
  }
}

}  // namespace
}  // namespace tw::testing

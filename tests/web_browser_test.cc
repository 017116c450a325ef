// The headless-Chromium client (support/browser.h) itself: that it reports what a page does
// wrong, reads back what a page drew, and times out instead of hanging. The web view's pages
// are tested through it in web_pages_test.cc.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>

#include "support/browser_suite.h"
#include "support/http_server.h"
#include "support/test_env.h"

namespace tw::testing {
namespace {

using Ms = std::chrono::milliseconds;
namespace json = boost::json;

class BrowserClient : public BrowserSuite {};

bool Has(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

TEST_F(BrowserClient, ReportsConsoleErrorsAndUncaughtExceptions) {
  browser().Navigate(DataUrl("<p>fine</p><script>console.log('not an error')</script>"));
  browser().Evaluate("1");  // a round trip: events before it have been read
  EXPECT_TRUE(browser().errors().empty()) << browser().ErrorReport();

  browser().Navigate(DataUrl(
      "<script>console.error('boom', 1);"
      "setTimeout(() => { window.done = true; throw new Error('thrown later'); }, 10);</script>"));
  browser().WaitFor("window.done", Ms(5000));
  browser().Evaluate("1");
  EXPECT_TRUE(Has(browser().errors(), "console.error: boom 1")) << browser().ErrorReport();
  EXPECT_TRUE(Has(browser().errors(), "thrown later")) << browser().ErrorReport();
}

TEST_F(BrowserClient, ReportsA404OfThePagesOwnResource) {
  HttpServer server;
  server.SetResponder([](const RecordedRequest& r) -> std::optional<Reply> {
    if (r.target == "/page")
      return Reply{200, "<!doctype html><script src=\"/missing.js\"></script><p>x</p>", {{"Content-Type", "text/html"}}};
    return Reply{404, "no", {{"Content-Type", "text/plain"}}};
  });
  browser().Navigate(server.url("/page"));
  browser().Evaluate("1");
  EXPECT_TRUE(Has(browser().errors(), "HTTP 404 for " + server.url("/missing.js"))) << browser().ErrorReport();
}

TEST_F(BrowserClient, DismissesAndReportsDialogs) {
  browser().Navigate(DataUrl("<script>alert('hello'); window.after = 1;</script>"));
  EXPECT_EQ(browser().Evaluate("window.after").as_int64(), 1);  // not blocked by the alert
  ASSERT_EQ(browser().dialogs().size(), 1u) << browser().ErrorReport();
  EXPECT_EQ(browser().dialogs()[0], "alert: hello");
}

TEST_F(BrowserClient, ACanvasDrawnRedReadsBackRedAndScreenshotsAreThatSize) {
  browser().Navigate(DataUrl(
      "<canvas id=c width=40 height=30></canvas><script>"
      "const g = document.getElementById('c').getContext('2d'); g.fillStyle = '#ff0000';"
      "g.fillRect(0, 0, 40, 30);</script>"));
  const json::value px =
      browser().Evaluate("Array.from(document.getElementById('c').getContext('2d').getImageData(20, 15, 1, 1).data)");
  EXPECT_EQ(json::serialize(px), "[255,0,0,255]");

  TempDir dir;
  browser().Screenshot(dir / "shot.png", 320, 200);
  const std::string png = ReadFile(dir / "shot.png");
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(png[at])) << 24) | (uint32_t(uint8_t(png[at + 1])) << 16) |
           (uint32_t(uint8_t(png[at + 2])) << 8) | uint32_t(uint8_t(png[at + 3]));
  };
  EXPECT_EQ(be32(16), 320u);  // IHDR width, height
  EXPECT_EQ(be32(20), 200u);
  EXPECT_EQ(browser().Evaluate("innerWidth").as_int64(), 320);
}

TEST_F(BrowserClient, APageThatNeverBecomesReadyTimesOutWithTheReason) {
  browser().Navigate(DataUrl("<body>never ready</body>"));
  const auto start = std::chrono::steady_clock::now();
  try {
    browser().WaitFor("document.body.dataset.ready === '1'", Ms(300));
    FAIL() << "WaitFor returned on a page that never became ready";
  } catch (const BrowserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("waited 300 ms for `document.body.dataset.ready === '1'`"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // A script that throws is an error with its description, not a hang or a null.
  try {
    browser().Evaluate("null.x");
    FAIL() << "Evaluate of a throwing script returned";
  } catch (const BrowserError& e) {
    EXPECT_NE(std::string(e.what()).find("TypeError"), std::string::npos) << e.what();
  }
  EXPECT_EQ(browser().Evaluate("0/0"), json::value("NaN"));
}

TEST(BrowserStart, MissingChromiumSaysHowToInstallIt) {
  Browser::Options o;
  o.chromium = "/nonexistent/chromium";
  try {
    Browser b(o);
    FAIL() << "a Browser started without Chromium";
  } catch (const BrowserError& e) {
    EXPECT_NE(std::string(e.what()).find("tools/install-deps.sh"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tw::testing

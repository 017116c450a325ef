// Web view benchmark: how long a run's page takes in a real browser, from navigation to the
// page saying it is done (document.body.dataset.ready = "1": its API answers fetched and its
// charts drawn), for a run of 2,000,000 scalar points against one of 1,000. A plain program.
//
//   web_bench [--points N] [--small N] [--every E] [--reps K] [--keep DIR]
//
// Two runs written with the test writer (bench/gen.h's curves) and ingested into one store:
//   big    train/loss at every step 0..N-1 (default N = 2,000,000), train/lr and
//          train/grad_norm every E-th step (default 10: N/10 each), as a run that logs its loss
//          every step and the rest less often (--every 1: all three at every step);
//   small  the same shape with --small steps (default 1,000): the baseline.
// A WebServer (src/web) serves the store on a port-0 loopback socket; one headless Chromium
// (tests/support/browser.h, viewport 1280 x 800) opens /runs/ID of each run, alternating, K
// times (default 7) after one unmeasured load each. Time to ready is the page's own
// performance.now() when ready is set (a MutationObserver on body's data-ready), i.e. from
// the start of the navigation. Printed: each page's median, min and max, the ratio of the
// medians (big / small), and for the big page's last load where the time went: the document,
// each API request (from Resource Timing: request start to response end, and its size) and
// the rest (scripts, JSON parsing, drawing).
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "gen.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/browser.h"
#include "support/event_writer.h"
#include "web/server.h"
#include "work_dir.h"

namespace {

namespace json = boost::json;
using tw::testing::Browser;
using Clock = std::chrono::steady_clock;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "web_bench: %s\n", why.c_str());
  std::exit(1);
}

// train/loss every step, train/lr and train/grad_norm every `every`-th.
int64_t WriteRun(const std::string& dir, int64_t steps, int64_t every) {
  tw::testing::EventFileWriter w(dir + "/" + tw::testing::EventFileName(1700000000, "bench", 1, 0));
  w.Add(tw::testing::FileVersionEvent(1.7e9));
  int64_t n = 0;
  for (int64_t s = 0; s < steps; ++s) {
    const double wall = 1.7e9 + static_cast<double>(s) * 0.1;
    w.Add(tw::testing::SimpleScalarEvent("train/loss", s, wall, tw::bench::ValueFor(0, s, 1)));
    ++n;
    if (s % every == 0) {
      w.Add(tw::testing::SimpleScalarEvent("train/lr", s, wall, tw::bench::ValueFor(1, s, 1)));
      w.Add(tw::testing::SimpleScalarEvent("train/grad_norm", s, wall, tw::bench::ValueFor(2, s, 1)));
      n += 2;
    }
  }
  w.Flush();
  return n;
}

// Resolves to performance.now() at the moment the page sets body's data-ready (now, if it
// already has).
constexpr const char* kReadyAtJs = R"JS(new Promise(resolve => {
  const ready = () => document.body && document.body.dataset.ready === '1';
  if (ready()) return resolve(performance.now());
  new MutationObserver((_, o) => { if (ready()) { o.disconnect(); resolve(performance.now()); } })
      .observe(document.documentElement, {attributes: true, subtree: true, childList: true});
}))JS";

constexpr const char* kWhereJs = R"JS((() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const api = performance.getEntriesByType('resource').filter(r => r.name.includes('/api/'))
      .map(r => ({url: r.name.replace(location.origin, ''), start: r.requestStart, end: r.responseEnd,
                  bytes: r.encodedBodySize}));
  const assets = performance.getEntriesByType('resource').filter(r => r.name.includes('/assets/'))
      .reduce((m, r) => Math.max(m, r.responseEnd), 0);
  return {document: nav ? nav.responseEnd : 0, dom: nav ? nav.domContentLoadedEventEnd : 0, assets, api};
})())JS";

double ReadyMs(Browser& b, const std::string& url) {
  b.Navigate(url);
  const json::value v = b.Evaluate(kReadyAtJs, std::chrono::milliseconds(60000));
  if (!b.errors().empty()) Die(url + " reported errors: " + b.ErrorReport());
  return v.to_number<double>();
}

struct Stats {
  double median, min, max;
};
Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2, v.front(), v.back()};
}

}  // namespace

int main(int argc, char** argv) {
  int64_t points = 2000000, small = 1000, every = 10;
  int reps = 7;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--points" && i + 1 < argc) points = std::stoll(argv[++i]);
    else if (a == "--small" && i + 1 < argc) small = std::stoll(argv[++i]);
    else if (a == "--every" && i + 1 < argc) every = std::max<int64_t>(1, std::stoll(argv[++i]));
    else if (a == "--reps" && i + 1 < argc) reps = std::stoi(argv[++i]);
    else if (a == "--keep" && i + 1 < argc) keep = argv[++i];
    else Die("usage: web_bench [--points N] [--small N] [--every E] [--reps K] [--keep DIR]");
  }
  try {
    tw::bench::WorkDir dir(keep, "web-bench", {"logs", "tw.db", "tw.db-wal", "tw.db-shm"});
    const std::string logs = dir.path() + "/logs", db = dir.path() + "/tw.db";
    auto t0 = Clock::now();
    const int64_t big_n = WriteRun(logs + "/big", points, every);
    const int64_t small_n = WriteRun(logs + "/small", small, every);
    auto store = tw::store::Store::Open(db);
    if (!store.ok()) Die(store.status().message());
    tw::ingest::Summary summary;
    if (const tw::Status st = tw::ingest::IngestPaths(**store, {logs}, {}, &summary); !st.ok()) Die(st.message());
    store->reset();
    std::printf("store: big %lld points (train/loss %lld, train/lr and train/grad_norm %lld each), small %lld; "
                "written and ingested in %.1f s\n",
                static_cast<long long>(big_n), static_cast<long long>(points),
                static_cast<long long>((points + every - 1) / every), static_cast<long long>(small_n),
                std::chrono::duration<double>(Clock::now() - t0).count());

    tw::web::WebServer server;
    tw::web::WebOptions o;
    o.port = 0;
    o.db_path = db;
    if (const tw::Status st = server.Start(o); !st.ok()) Die(st.message());
    const std::string base = "http://127.0.0.1:" + std::to_string(server.port());

    Browser b;
    b.Navigate(base + "/api/runs");
    std::string big_url, small_url;
    const json::value runs = b.Evaluate("fetch('/api/runs').then(r => r.json())");
    for (const auto& r : runs.at("runs").as_array()) {
      const std::string url = base + "/runs/" + std::to_string(r.at("id").as_int64());
      (r.at("name") == "big" ? big_url : small_url) = url;
    }
    if (big_url.empty() || small_url.empty()) Die("the runs are not in the store");

    ReadyMs(b, small_url);  // unmeasured: the first load of the assets, SQLite's page cache
    ReadyMs(b, big_url);
    std::vector<double> big_ms, small_ms;
    for (int i = 0; i < reps; ++i) {
      small_ms.push_back(ReadyMs(b, small_url));
      big_ms.push_back(ReadyMs(b, big_url));
    }
    const json::value where = b.Evaluate(kWhereJs);

    const Stats s = Summarize(small_ms), g = Summarize(big_ms);
    std::printf("run page, navigation start to ready, %d loads each (median, min-max):\n", reps);
    std::printf("  small (%lld points)  %7.1f ms  (%.1f-%.1f)\n", static_cast<long long>(small_n), s.median, s.min,
                s.max);
    std::printf("  big   (%lld points)  %7.1f ms  (%.1f-%.1f)\n", static_cast<long long>(big_n), g.median, g.min,
                g.max);
    std::printf("  ratio big / small   %7.2f   (target: big under 1000 ms)\n", g.median / s.median);
    std::printf("where the big page's last load went (ms from navigation start):\n");
    std::printf("  document answered %.1f, DOMContentLoaded done %.1f, assets done %.1f\n",
                where.at("document").to_number<double>(), where.at("dom").to_number<double>(),
                where.at("assets").to_number<double>());
    double api_end = 0;
    for (const auto& r : where.at("api").as_array()) {
      const double start = r.at("start").to_number<double>(), end = r.at("end").to_number<double>();
      api_end = std::max(api_end, end);
      std::printf("  %-48s %7.1f -> %7.1f  (%6.1f ms, %lld bytes)\n", std::string(r.at("url").as_string()).c_str(),
                  start, end, end - start, static_cast<long long>(r.at("bytes").to_number<double>()));
    }
    std::printf("  after the last API answer to ready: %.1f ms (JSON parsing, building the page, drawing)\n",
                big_ms.back() - api_end);
  } catch (const std::exception& e) {
    Die(e.what());
  }
  return 0;
}

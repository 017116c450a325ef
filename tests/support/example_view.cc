#include "support/example_view.h"

#include <boost/json.hpp>
#include <stdexcept>
#include <thread>

#include "support/test_env.h"

namespace tw::testing {

namespace json = boost::json;

namespace {

std::string WriteExample(const std::string& dir, const std::string& example_binary) {
  std::string out;
  const std::string logs = dir + "/example-logdir";  // as tools/run-example.sh names it
  if (RunCommand(ShellQuote(example_binary) + " " + ShellQuote(logs), &out) != 0)
    throw std::runtime_error("trainwatch-example " + logs + " failed: " + out);
  return logs;
}

}  // namespace

ExampleView::ExampleView(const std::string& dir, const std::string& example_binary)
    : dir_(dir),
      daemon_({"--logdir", WriteExample(dir, example_binary), "--db", dir + "/tw.db", "--rescan-interval", "1",
               "--web", "127.0.0.1:0"},
              dir + "/daemon.log") {
  const std::string said = "web view: http://127.0.0.1:";
  if (!daemon_.WaitForLog(said, std::chrono::seconds(30)))
    throw std::runtime_error("the daemon did not serve its web view:\n" + daemon_.Log());
  const std::string log = daemon_.Log();
  base_ = "http://127.0.0.1:" + std::to_string(std::stoi(log.substr(log.find(said) + said.size())));
}

json::value FetchJson(Browser& browser, const std::string& path) {
  return browser.Evaluate("fetch(" + json::serialize(json::value(path)) +
                          ").then(r => r.ok ? r.json() : Promise.reject(new Error(r.status + ' ' + r.url)))");
}

void ExampleView::WaitDiagnosed(Browser& browser, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  browser.Navigate(url("/api/runs"));  // any page of the origin, for fetch
  // Verdict and firing count per run, in the API's order.
  auto judged = [&] {
    std::string s;
    const json::value runs = FetchJson(browser, "/api/runs");
    for (const auto& r : runs.at("runs").as_array())
      s += json::serialize(r.at("name")) + json::serialize(r.at("verdict")) + json::serialize(r.at("firing")) + ";";
    return s;
  };
  std::string last;
  int same = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string now = judged();
    // The example's verdicts: its diverged run is killed, its overfitting and leaking runs
    // are watched (tools/make_example_logdir.cc). A run's critical findings (the kill) come
    // first, in a pass of their own; the watch verdicts a while later.
    const bool judged = now.find("\"bert-finetune-diverged\"\"kill\"") != std::string::npos &&
                        now.find("\"watch\"") != std::string::npos;
    same = judged && now == last ? same + 1 : 0;
    if (same >= 4) return;  // 4 x 250 ms unchanged
    last = now;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  throw BrowserError("the daemon did not judge the example within " + std::to_string(timeout.count()) +
                     " ms; its runs: " + last + "\ndaemon log:\n" + daemon_.Log());
}

}  // namespace tw::testing

// tw-web-screenshots [OUTDIR]: pictures of the web view for the README. Writes the bundled
// example logdir (trainwatch-example) to a temporary directory, runs `trainwatch daemon --web
// 127.0.0.1:0` on it until it has judged the runs (in $TMPDIR/trainwatch, removed after), and photographs two pages in headless
// Chromium (tests/support/browser.h), 1280 x 800:
//   OUTDIR/runs.png      the run list (/)
//   OUTDIR/run-nan.png   the diverged run's page (/runs/ID of bert-finetune-diverged)
// OUTDIR defaults to docs/img of this checkout. A page that reports an error (console,
// exception, failed load) fails the program: a picture of a broken page is no picture.
#include <filesystem>
#include <iostream>

#include <boost/json.hpp>

#include "support/browser.h"
#include "support/example_view.h"
#include "support/test_env.h"

namespace {

namespace json = boost::json;
using tw::testing::Browser;
using Ms = std::chrono::milliseconds;

constexpr int kWidth = 1280, kHeight = 800;

void Shoot(Browser& b, const std::string& url, const std::string& png) {
  b.ClearErrors();
  b.Navigate(url);
  b.WaitFor("document.body.dataset.ready === '1'", Ms(30000));
  b.Evaluate("1");
  if (!b.errors().empty() || !b.dialogs().empty())
    throw tw::testing::BrowserError(url + " reported errors: " + b.ErrorReport());
  b.Screenshot(png, kWidth, kHeight);
  std::cout << png << "  (" << url << ")\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    std::cerr << "usage: tw-web-screenshots [OUTDIR]   (default: " TW_SOURCE_DIR "/docs/img)\n";
    return 2;
  }
  const std::string out = argc == 2 ? argv[1] : TW_SOURCE_DIR "/docs/img";
  try {
    std::filesystem::create_directories(out);
    // A fixed directory, not a random one: its path is on the pages (each run's root).
    const std::string dir = (std::filesystem::temp_directory_path() / "trainwatch").native();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    struct Remove {
      std::string dir;
      ~Remove() { std::filesystem::remove_all(dir); }
    } remove{dir};
    tw::testing::ExampleView view(dir, TW_EXAMPLE_BINARY);
    Browser::Options o;
    o.width = kWidth;
    o.height = kHeight;
    Browser b(o);
    view.WaitDiagnosed(b);
    int64_t nan_run = -1;
    const json::value runs = tw::testing::FetchJson(b, "/api/runs");
    for (const auto& r : runs.at("runs").as_array())
      if (r.at("name") == "bert-finetune-diverged") nan_run = r.at("id").as_int64();
    Shoot(b, view.url("/"), out + "/runs.png");
    Shoot(b, view.url("/runs/" + std::to_string(nan_run)), out + "/run-nan.png");
  } catch (const std::exception& e) {
    std::cerr << "tw-web-screenshots: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

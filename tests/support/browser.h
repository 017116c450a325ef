// A headless Chromium driven over the DevTools protocol (CDP), for tests, tools and benchmarks
// of the web view (docs/web.md): it loads pages, evaluates JavaScript, waits for conditions,
// takes screenshots, and records every error a page shows (console errors, uncaught exceptions,
// error log entries, 4xx/5xx answers and failed loads of its own resources, dialogs).
//
// One Browser is one Chromium process (/usr/bin/chromium, or $TW_CHROMIUM) with one page,
// spoken to over a websocket (Boost.Beast) on loopback. Every wait has a deadline: nothing here
// can hang a test. The destructor closes Chromium, kills its whole process group and removes its
// profile directory, also when a test failed. Failures are thrown as BrowserError, whose message
// says what was waited for and what the page reported so far.
//
// Threads: a Browser is used by one thread at a time; events are read only while one of its
// calls runs (no thread of its own).
#pragma once

#include <boost/json/value.hpp>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tw::testing {

class BrowserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Browser {
 public:
  using Ms = std::chrono::milliseconds;
  struct Options {
    std::string chromium;  // "": $TW_CHROMIUM, else /usr/bin/chromium
    Ms start_timeout{30000};  // Chromium's start, to its DevTools endpoint and a page
    Ms call_timeout{30000};   // any one protocol call without a timeout of its own
    int width = 1280;         // the page's viewport, in CSS pixels
    int height = 800;
  };

  // Starts Chromium and opens a page on about:blank. Throws BrowserError; when Chromium is not
  // installed, its message says to run tools/install-deps.sh.
  Browser();
  explicit Browser(Options options);
  ~Browser();
  Browser(const Browser&) = delete;
  Browser& operator=(const Browser&) = delete;

  // Loads `url` and waits for its load event.
  void Navigate(const std::string& url, Ms timeout = Ms(30000));
  // Evaluates `js` in the page (awaiting a promise) and returns its value as JSON: undefined
  // is null, NaN and the infinities are the strings "NaN", "Infinity", "-Infinity" (as the
  // web API writes them). A thrown exception is a BrowserError with its description.
  boost::json::value Evaluate(const std::string& js, Ms timeout = Ms(30000));
  // Polls the expression `predicate` (every 50 ms; an exception counts as false) until it is
  // truthy; throws BrowserError naming it and the page's errors when `timeout` passes first.
  void WaitFor(const std::string& predicate, Ms timeout);
  // The viewport in CSS pixels (device scale factor 1).
  void SetViewport(int width, int height);
  // Sets the viewport, lets the page lay out and paint twice, and writes a PNG of it.
  void Screenshot(const std::string& png_path, int width, int height);

  // What went wrong in the page since the start or the last ClearErrors(), one line each.
  // Chromium's own request for /favicon.ico is not the page's and its 404 is not counted.
  const std::vector<std::string>& errors() const;
  // The JavaScript dialogs (alert, confirm, prompt, beforeunload) the page opened, as
  // "TYPE: MESSAGE"; each was dismissed at once.
  const std::vector<std::string>& dialogs() const;
  void ClearErrors();
  // errors() and dialogs() as text for a failure message ("none" when there are none).
  std::string ErrorReport() const;
  // Chromium's stderr so far (it goes to a file in the profile directory).
  std::string Stderr() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw::testing

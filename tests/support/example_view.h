// The bundled example logdir (trainwatch-example) under a real daemon that serves its web view
// on a port-0 loopback socket: what the web pages' tests, the screenshot tool
// (tools/web_screenshots.cc) and anyone showing the pages start from.
//
// Threads: one owner thread.
#pragma once

#include <string>

#include "support/browser.h"
#include "support/daemon_process.h"

namespace tw::testing {

class ExampleView {
 public:
  // Writes the example logdir to DIR/example-logdir with `example_binary`, starts `trainwatch daemon`
  // on it (store DIR/tw.db, log DIR/daemon.log, --web 127.0.0.1:0) and waits until it says
  // where its view is. Throws std::runtime_error (with the daemon's log) when it does not.
  ExampleView(const std::string& dir, const std::string& example_binary);

  // http://127.0.0.1:PORT + path
  std::string url(const std::string& path = "/") const { return base_ + path; }
  DaemonProcess& daemon() { return daemon_; }

  // Waits until the daemon has read and judged the example: the diverged run is `kill`, a
  // run is `watch`, and the runs' verdicts and firing counts stayed the same for a second. Asks the API through
  // `browser` (fetch, from a page of the view's origin). Throws BrowserError at the timeout.
  void WaitDiagnosed(Browser& browser, std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

 private:
  std::string dir_;
  DaemonProcess daemon_;
  std::string base_;
};

// The JSON of GET `path` (e.g. "/api/runs"), fetched by the page now open in `browser`, which
// must be a page of the view's origin.
boost::json::value FetchJson(Browser& browser, const std::string& path);

}  // namespace tw::testing

// The web view's HTTP server (docs/web.md): the embedded pages and assets, and a JSON API
// under /api/ over the store, served with Boost.Beast on its own threads. It reads only, but
// for one write: POST /api/silences, on a read-write connection of its own.
//
// Threads: one I/O thread accepts connections, reads requests, checks access and writes
// answers; it never touches SQLite. Each admitted request runs on one of `max_concurrent`
// worker threads, on a read-only connection of its own that lives for that request only, so
// the server never holds a lock the daemon's writer could wait on (WAL readers never block the
// writer). Start() and Stop() are called by the owner's thread, never concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "diagnose/roles.h"

namespace tw::web {

struct WebOptions {
  std::string address = "127.0.0.1";  // an IP literal or "localhost"
  uint16_t port = 8421;               // 0: any free port; port() tells which
  std::string db_path;
  // Required beyond loopback (Start refuses without it); when set, required everywhere.
  std::string token;
  int max_concurrent = 16;                          // requests being answered; more: 503
  std::chrono::milliseconds time_limit{5000};       // per request, from its arrival; then 503
  std::chrono::milliseconds idle_limit{30000};      // reading a request, writing an answer
  double live_window_seconds = 600;                 // a run is live if it wrote this recently
  double refresh_seconds = 10;                      // the runs page polls this often
  // How the pages find a run's curves: the daemon's role patterns (EffectiveRolePatterns of its
  // config's [roles]); empty: the built-in ones.
  std::vector<diagnose::RolePattern> role_patterns;
  // Tests only: called on the worker thread after a request is admitted, before its SQL.
  std::function<void()> on_admitted;
};

class WebServer {
 public:
  WebServer();
  ~WebServer();  // Stop()s
  WebServer(const WebServer&) = delete;
  WebServer& operator=(const WebServer&) = delete;

  // Checks the options (a non-loopback address needs a token), binds and starts serving.
  Status Start(WebOptions options);
  uint16_t port() const;  // the bound port, after Start
  // Stops accepting, interrupts running queries and joins every thread. Idempotent.
  void Stop();

  struct Impl;  // server.cc's, shared with its connections

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tw::web

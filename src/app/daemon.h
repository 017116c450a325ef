// `trainwatch daemon`: watch roots, ingest continuously, run under systemd.
//
// Threads (docs/daemon.md has the whole picture):
//   - the I/O thread (the main thread) runs the io_context: inotify, the rescan and watchdog
//     timers, signals, sd_notify. It owns the watcher, the last rescan snapshot and the config.
//   - the writer thread runs IngestWorker::Run and owns the store connection that writes
//     points, files and daemon state.
//   - the diagnosis thread (DiagnoseWorker) reads on its own connection and writes only the
//     findings tables.
//   - the delivery thread (NotifyWorker) sends the outbox on its own connection.
//   - with [fleet], the shipper thread (fleet::Shipper) copies what the store committed to
//     PostgreSQL on connections of its own.
//   They share only the WorkQueue (paths), IngestWorker's thread-safe setters/counters, and the
//   InstanceLock (the store's lock file), whose SetCondition the delivery thread calls.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "app/config.h"

namespace tw::app {

struct DaemonArgs {
  std::string config_path;              // empty: no config file, defaults + flags
  std::vector<std::string> logdirs;     // --logdir, added to the configured roots
  std::string db_path;                  // --db, overrides the config
  std::optional<double> rescan_seconds; // --rescan-interval
  bool no_inotify = false;              // --no-inotify
  bool verbose = false;                 // --verbose
  std::vector<std::string> slack_webhooks;  // --slack-webhook URL: a Slack channel each
  std::vector<std::string> webhooks;        // --webhook URL: a generic JSON webhook each
  std::vector<std::string> slack_webhook_files, webhook_files;  // the same, the URL in a file
  std::optional<std::string> web_listen;  // --web ADDRESS:PORT, overrides [web] listen
  std::optional<std::string> postgres;    // --postgres CONNINFO, overrides [fleet] postgres
};

// The effective configuration: the file (if any), then the flags on top; validated.
Result<Config> BuildConfig(const DaemonArgs& args);

// Runs until SIGTERM/SIGINT. Returns the process exit status: 0 after a clean stop, or why
// it could not go on (docs/daemon.md; none of these is helped by a restart, except 1):
constexpr int kExitConfig = 78;    // EX_CONFIG: a configuration error, or a store not ours
constexpr int kExitCorrupt = 65;   // EX_DATAERR: the store is corrupt
constexpr int kExitReadOnly = 73;  // EX_CANTCREAT: the store cannot be written
constexpr int kExitBusy = 75;      // EX_TEMPFAIL: another daemon is using the store
// 1: anything else that stopped it.
int RunDaemon(const DaemonArgs& args);

// The exit status for a store error (1 for one not listed above).
int ExitCodeFor(const Status& store_error);

}  // namespace tw::app

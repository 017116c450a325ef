// The fleet store (docs/fleet.md): each host's daemon ships what its local SQLite store
// committed to one shared PostgreSQL, whose schema is the local one's twin with a `host`
// column (sql/fleet/). The local store stays the source of truth for ingest and diagnosis;
// PostgreSQL is a copy that may lag (while it is down, the backlog waits locally).
//
// Threads: the Shipper runs on a thread of its own and owns everything it opens: two SQLite
// connections to the local store (a reader whose transaction is a pass's snapshot, and a writer
// of the fleet_* marks and daemon_state 'fleet' only) and one PostgreSQL connection. Start,
// Stop and Wake may be called from any one other thread (the daemon's I/O thread); Wake is
// thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "fleet/options.h"

namespace tw::fleet {

class Pg;  // fleet/pg.h


// The conninfo as messages may show it: host, port, database, user and sslmode, never a
// password (nor anything else it holds). An unparsable one is described as such.
std::string DescribeConninfo(const std::string& conninfo);
// Whether libpq can parse `conninfo` (a config error otherwise: the message says why, without
// quoting it).
Status CheckConninfo(const std::string& conninfo);
// Whether `conninfo` holds a password of its own (postgresql://user:secret@...).
bool ConninfoHasPassword(const std::string& conninfo);
// This machine's host name.
std::string LocalHostName();

// Creates or migrates the fleet schema (sql/fleet/NNN_*.sql) in the database `conninfo` names.
// Concurrent callers serialize on an advisory lock; a database of a newer version is refused.
Status MigrateFleet(const FleetOptions& options);
int LatestFleetVersion();

// What one pass did.
struct PassStats {
  int64_t sources = 0;      // sources whose points were shipped
  int64_t rows = 0;         // rows sent (points, runs, series, findings, ...)
  int64_t superseded = 0;   // supersede_log entries applied
  bool complete = false;    // everything committed before the pass began is in PostgreSQL now
};

// What is committed locally but not yet in PostgreSQL (sources with points not shipped, and
// their bytes). Read from the store at `db_path`.
struct Lag {
  int64_t sources = 0;
  int64_t bytes = 0;
};
Result<Lag> ReadLag(const std::string& db_path);

// What the fleet's PostgreSQL says about its hosts (`trainwatch fleet status`).
struct HostStatus {
  std::string host;
  double started = 0, last_heartbeat = 0;
  std::optional<double> last_shipped;
  int64_t lag_sources = 0, lag_bytes = 0;
  std::vector<std::string> roots;
  std::vector<std::string> owns;  // shared roots whose lease it holds
};
struct FleetStatus {
  int version = 0;
  std::vector<HostStatus> hosts;
};
Result<FleetStatus> ReadFleetStatus(const FleetOptions& options);

class Shipper {
 public:
  Shipper(std::string db_path, FleetOptions options);
  ~Shipper();
  Shipper(const Shipper&) = delete;
  Shipper& operator=(const Shipper&) = delete;

  void Start();
  void Stop();   // waits for the pass in progress to stop at its next row or commit
  void Wake();   // thread-safe: the writer committed something

  // One pass now, on the caller's thread (tests, the benchmark); not while Start()ed.
  Result<PassStats> ShipOnce();

 private:
  class Pass;
  void Loop();
  Status EnsureOpen();
  void Report(const Status& st);

  const std::string db_path_;
  const FleetOptions options_;
  std::thread thread_;
  std::mutex mu_;  // guards stop_ and woken_
  std::condition_variable cv_;
  bool stop_ = false;
  bool woken_ = false;
  // The shipper thread's:
  struct Conns;
  std::unique_ptr<Conns> conns_;
  std::string condition_;  // the error it waits on ("" when all is well), logged once
  double condition_since_ = 0;
  int failures_ = 0;
  double started_ = 0;
  std::string state_line_;  // what daemon_state 'fleet' says now
};

// Shared roots' leases (docs/fleet.md, "Shared roots"). A host holds a root's lease while it
// holds a session advisory lock on it (pg_try_advisory_lock, on the keeper's own connection)
// and keeps the lease row's heartbeat fresh (every lease_seconds / 4). Another host takes the
// root when the lock is free (the holder's session ended: it died, or lost PostgreSQL) and the
// heartbeat is older than lease_seconds (PostgreSQL's clock, so hosts' clocks do not matter).
// A holder that cannot renew for lease_seconds / 2 lets the root go itself, before anyone may
// take it. On taking a root another host held, the keeper copies that host's findings on the
// root's runs from PostgreSQL into the local store (runs and series created for them), so the
// diagnosis that reads the root again does not announce what was announced already.
//
// Thread: its own (Start/Stop from one other thread); Owned and Describe are thread-safe; the
// change callback runs on the keeper's thread.
class LeaseKeeper {
 public:
  LeaseKeeper(std::string db_path, FleetOptions options);
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  void Start(std::function<void()> on_change);
  void Stop();
  std::vector<std::string> Owned() const;
  // One line per shared root: "ROOT: held by this host" or "ROOT: skipped, held by HOST".
  std::string Describe() const;

 private:
  void Loop();
  void Tick();
  Status Adopt(const std::string& root);

  const std::string db_path_;
  const FleetOptions options_;
  std::function<void()> on_change_;
  std::thread thread_;
  mutable std::mutex mu_;  // guards the four below
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::string> owned_;
  std::string described_;
  // The keeper thread's:
  std::unique_ptr<Pg> pg_;
  std::map<std::string, double> renewed_;     // root -> monotonic seconds of the last renewal
  std::map<std::string, bool> locked_;        // root -> this connection holds its advisory lock
  std::map<std::string, std::string> holder_; // root -> who holds it, when not this host
  std::string error_;                         // the last connection error, logged once
};

}  // namespace tw::fleet

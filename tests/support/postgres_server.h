// A real PostgreSQL for the fleet tests (and the shipping benchmark): initdb into a temporary
// directory, a server listening on a Unix socket in that directory and on 127.0.0.1 at a port
// that was free, torn down (stopped, directory removed) when the object dies. initdb and postgres refuse
// to run as root: as root, both run as `nobody` (setpriv), which owns the directory.
//
// The binaries are looked for in /usr/lib/postgresql/*/bin (Debian's postgresql-15), then on
// PATH. Tests call TW_REQUIRE_POSTGRES() first: it skips, loudly, only when they are absent.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "support/test_env.h"

namespace tw::testing {

class PostgresServer {
 public:
  // The directory holding initdb, pg_ctl and postgres; "" when PostgreSQL is not installed.
  static std::string BinDir();

  PostgresServer();  // initdb and start; throws std::runtime_error (with the server's log) on failure
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  void Stop();   // a fast shutdown (connections are cut, as in an outage); waits for it
  void Start();  // again, on the same data
  bool running() const { return running_; }

  // A key=value connection string for database `db` as the superuser `tw` (trust auth), over
  // the socket; tcp_conninfo over 127.0.0.1 (where sslmode means something).
  std::string conninfo(const std::string& db = "postgres") const;
  std::string tcp_conninfo(const std::string& db = "postgres") const;
  // Rows of a query, each "a|b|c" (NULL as \N); throws on an error.
  std::vector<std::string> Query(const std::string& sql, const std::string& db = "postgres") const;
  // Creates database `name` (each test its own).
  void CreateDatabase(const std::string& name) const;
  std::string Log() const;

 private:
  std::string Run(const std::string& command) const;  // as the server's user, in the directory
  TempDir dir_;
  std::string bin_, data_, log_;
  bool running_ = false;
  int port_ = 0;  // on 127.0.0.1 (and the socket's name)
};

}  // namespace tw::testing

// Skips the test, saying why, only when PostgreSQL's binaries are not installed
// (tools/install-deps.sh installs them; CI has them).
#define TW_REQUIRE_POSTGRES()                                                                     \
  do {                                                                                            \
    if (::tw::testing::PostgresServer::BinDir().empty())                                          \
      GTEST_SKIP() << "SKIPPED: PostgreSQL is not installed (initdb/pg_ctl/postgres not found in " \
                      "/usr/lib/postgresql/*/bin or PATH); tools/install-deps.sh installs it";     \
  } while (0)

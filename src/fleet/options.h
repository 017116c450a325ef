// What [fleet] configures (docs/fleet.md), apart from fleet.h so that the config does not
// depend on the shipper's declarations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tw::fleet {

struct FleetOptions {
  std::string conninfo;    // a libpq URI (postgresql://...) or key=value string; "": no fleet
  std::string password;    // a secret, passed beside the conninfo; never logged
  std::string host;        // this host's name in the fleet (default: gethostname)
  int64_t interval_ms = 1000;   // a pass at least this often (sooner when woken)
  int64_t batch_rows = 50000;   // PostgreSQL commits (and local marks advance) every this many rows
  std::vector<std::string> roots;  // the roots this host watches, for `fleet status`
  // Shared roots (the same directory mounted on several hosts, at the same path): ingested and
  // diagnosed only while this host holds the root's lease (LeaseKeeper).
  std::vector<std::string> shared_roots;
  double lease_seconds = 30;  // a lease whose heartbeat is older than this has lapsed
  bool operator==(const FleetOptions&) const = default;
};

}  // namespace tw::fleet

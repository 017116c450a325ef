// `trainwatch fleet status`: the hosts table and the leases, read from PostgreSQL.
#include <cstdlib>
#include <map>

#include "fleet/fleet.h"
#include "fleet/pg.h"

namespace tw::fleet {

namespace {
double Num(const std::optional<std::string>& v) { return v ? std::strtod(v->c_str(), nullptr) : 0; }
}  // namespace

Result<FleetStatus> ReadFleetStatus(const FleetOptions& options) {
  Result<std::unique_ptr<Pg>> pg = Pg::Connect(options.conninfo, options.password, "trainwatch fleet status");
  if (!pg.ok()) return pg.status();
  FleetStatus out;
  Result<PgRows> version = (*pg)->Query(
      "SELECT value FROM fleet_meta WHERE key = 'version' AND to_regclass('fleet_meta') IS NOT NULL");
  if (!version.ok()) return NotFound("no trainwatch fleet schema in that database (no daemon has shipped to it yet)");
  if (!version->rows.empty()) out.version = std::atoi(version->rows[0][0].value_or("0").c_str());
  Result<PgRows> hosts = (*pg)->Query(
      "SELECT host, started, last_heartbeat, last_shipped, lag_sources, lag_bytes, roots FROM hosts ORDER BY host");
  if (!hosts.ok()) return hosts.status();
  std::map<std::string, size_t> at;
  for (const auto& r : hosts->rows) {
    HostStatus h;
    h.host = r[0].value_or("");
    h.started = Num(r[1]);
    h.last_heartbeat = Num(r[2]);
    if (r[3]) h.last_shipped = Num(r[3]);
    h.lag_sources = static_cast<int64_t>(Num(r[4]));
    h.lag_bytes = static_cast<int64_t>(Num(r[5]));
    const std::string roots = r[6].value_or("");
    for (size_t i = 0; i < roots.size();) {
      size_t nl = roots.find('\n', i);
      if (nl == std::string::npos) nl = roots.size();
      if (nl > i) h.roots.push_back(roots.substr(i, nl - i));
      i = nl + 1;
    }
    at[h.host] = out.hosts.size();
    out.hosts.push_back(std::move(h));
  }
  Result<PgRows> leases = (*pg)->Query("SELECT root, host FROM leases ORDER BY root");
  if (!leases.ok()) return leases.status();
  for (const auto& r : leases->rows) {
    auto it = at.find(r[1].value_or(""));
    if (it != at.end()) out.hosts[it->second].owns.push_back(r[0].value_or(""));
  }
  return out;
}

}  // namespace tw::fleet

// `trainwatch fleet status`: the hosts shipping to one PostgreSQL (docs/fleet.md).
#include <cmath>
#include <iostream>

#include "app/daemon.h"
#include "base/clock.h"
#include "base/json.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/format.h"
#include "fleet/fleet.h"

namespace tw::cli {
namespace {

constexpr const char* kFleetHelp = R"(usage: trainwatch fleet status [--config FILE | --postgres CONNINFO] [--json]

The hosts that ship their stores to the fleet's PostgreSQL (docs/fleet.md): for each, its last
heartbeat, what it has not shipped yet (files and bytes), when it last shipped, its roots, and
the shared roots whose lease it holds.

options:
  --config FILE        the daemon's config: [fleet] postgres and its password
  --postgres CONNINFO  postgresql://USER@HOST:PORT/DB?sslmode=... (overrides the config); the
                       password from the config, $PGPASSWORD or ~/.pgpass
  --json               one JSON object
  --help               this text

exit status: 0, 1 when PostgreSQL cannot be read, 2 on a usage error
)";

std::string Seconds(double since) {
  if (since <= 0) return "never";
  return std::to_string(std::llround(UnixNow() - since)) + " s ago";
}

}  // namespace

int CmdFleet(const Args& args) {
  if (args.empty() || args[0] != "status") {
    if (!args.empty() && (args[0] == "--help" || args[0] == "help")) return Usage(kFleetHelp);
    return Usage(kFleetHelp, "fleet needs a subcommand: status");
  }
  Flags f(Args(args.begin() + 1, args.end()), {"config", "postgres"}, {"json", "help"});
  if (f.Has("help")) return Usage(kFleetHelp);
  if (!f.error().empty()) return Usage(kFleetHelp, f.error());
  fleet::FleetOptions o;
  if (auto c = f.Get("config")) {
    Result<app::Config> cfg = app::LoadConfigFile(*c);
    if (!cfg.ok()) {
      std::cerr << "trainwatch: " << cfg.status().message() << "\n";
      return 2;
    }
    o = cfg->fleet;
  }
  if (auto p = f.Get("postgres")) {
    if (Status st = fleet::CheckConninfo(*p); !st.ok()) return Usage(kFleetHelp, "--postgres: " + st.message());
    o.conninfo = *p;
  }
  if (o.conninfo.empty()) return Usage(kFleetHelp, "fleet status needs --postgres CONNINFO or a config with [fleet] postgres");
  Result<fleet::FleetStatus> s = fleet::ReadFleetStatus(o);
  if (!s.ok()) {
    std::cerr << "trainwatch: " << fleet::DescribeConninfo(o.conninfo) << ": " << s.status().message() << "\n";
    return 1;
  }
  if (f.Has("json")) {
    std::cout << "{\"schema_version\":" << s->version << ",\"hosts\":[";
    for (size_t i = 0; i < s->hosts.size(); ++i) {
      const fleet::HostStatus& h = s->hosts[i];
      std::cout << (i ? "," : "") << "{\"host\":" << JsonQuote(h.host) << ",\"last_heartbeat\":" << std::llround(h.last_heartbeat)
                << ",\"last_shipped\":" << (h.last_shipped ? std::to_string(std::llround(*h.last_shipped)) : "null")
                << ",\"lag_files\":" << h.lag_sources << ",\"lag_bytes\":" << h.lag_bytes << ",\"roots\":[";
      for (size_t j = 0; j < h.roots.size(); ++j) std::cout << (j ? "," : "") << JsonQuote(h.roots[j]);
      std::cout << "],\"owns\":[";
      for (size_t j = 0; j < h.owns.size(); ++j) std::cout << (j ? "," : "") << JsonQuote(h.owns[j]);
      std::cout << "]}";
    }
    std::cout << "]}\n";
    return 0;
  }
  std::cout << "fleet:       " << fleet::DescribeConninfo(o.conninfo) << " (schema version " << s->version << ", "
            << s->hosts.size() << (s->hosts.size() == 1 ? " host)\n" : " hosts)\n");
  for (const fleet::HostStatus& h : s->hosts) {
    std::cout << "host:        " << h.host << ": heartbeat " << Seconds(h.last_heartbeat) << "; lag "
              << h.lag_sources << " files (" << HumanBytes(static_cast<double>(h.lag_bytes)) << "); last shipped "
              << (h.last_shipped ? Seconds(*h.last_shipped) : "never") << "\n";
    for (const auto& r : h.roots) std::cout << "  root:      " << r << "\n";
    for (const auto& r : h.owns) std::cout << "  owns:      " << r << " (shared)\n";
  }
  return 0;
}

}  // namespace tw::cli

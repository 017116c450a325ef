#include "fleet/schema.h"

#include <cstdlib>
#include <string>

#include "fleet/fleet.h"

namespace tw::fleet {

namespace {
// The advisory lock every daemon takes while it creates or migrates the schema: the first
// creates it, the others then find it current.
constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock(7477001)";

int VersionOf(const char* name) { return std::atoi(name); }
}  // namespace

int LatestFleetVersion() {
  int v = 0;
  for (const auto& m : EmbeddedFleetMigrations()) v = std::max(v, VersionOf(m.name));
  return v;
}

Status Migrate(Pg& pg) {
  TW_RETURN_IF_ERROR(pg.Exec("BEGIN"));
  auto fail = [&](Status st) {
    (void)pg.Exec("ROLLBACK");
    return st;
  };
  if (Status st = pg.Exec(kMigrationLock); !st.ok()) return fail(st);
  if (Status st = pg.Exec("CREATE TABLE IF NOT EXISTS fleet_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      !st.ok())
    return fail(st);
  Result<PgRows> got = pg.Query("SELECT value FROM fleet_meta WHERE key = 'version'");
  if (!got.ok()) return fail(got.status());
  const int have = got->rows.empty() || !got->rows[0][0] ? 0 : std::atoi(got->rows[0][0]->c_str());
  if (have > LatestFleetVersion())
    return fail(InvalidArgument("the fleet database is at schema version " + std::to_string(have) +
                                ", newer than this trainwatch knows (" + std::to_string(LatestFleetVersion()) +
                                "): upgrade trainwatch on this host"));
  for (const auto& m : EmbeddedFleetMigrations()) {
    if (VersionOf(m.name) <= have) continue;
    if (Status st = pg.Exec(m.sql); !st.ok())
      return fail(Status(st.code(), std::string("fleet schema ") + m.name + ": " + st.message()));
  }
  Result<PgRows> set = pg.Query(
      "INSERT INTO fleet_meta(key, value) VALUES ('version', $1) "
      "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
      {std::to_string(LatestFleetVersion())});
  if (!set.ok()) return fail(set.status());
  return pg.Exec("COMMIT");
}

}  // namespace tw::fleet

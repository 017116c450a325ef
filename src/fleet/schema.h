// The fleet schema's migrations: sql/fleet/NNN_name.sql, embedded at build time, applied in
// order; the version is kept in the table fleet_meta.
#pragma once

#include <vector>

#include "base/status.h"
#include "fleet/pg.h"

namespace tw::fleet {

struct EmbeddedFleetSql {
  const char* name;  // "001_fleet_schema.sql": the number is the version it brings the database to
  const char* sql;
};
const std::vector<EmbeddedFleetSql>& EmbeddedFleetMigrations();  // generated from sql/fleet/*.sql

// Brings the database `pg` is connected to to the latest version.
Status Migrate(Pg& pg);

}  // namespace tw::fleet

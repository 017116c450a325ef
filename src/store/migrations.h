// Schema migrations: sql/NNN_name.sql files, embedded at build time, applied in order by
// PRAGMA user_version. A database whose version is newer than this binary knows is refused.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "store/db.h"

namespace tw::store {

struct EmbeddedSql {
  const char* name;  // e.g. "001_schema.sql": the number is the version it brings the DB to
  const char* sql;
};
const std::vector<EmbeddedSql>& EmbeddedMigrations();  // generated from sql/*.sql

int LatestSchemaVersion();
// Brings `db` to the latest version. Refuses a non-empty database that is not ours.
Status Migrate(Db& db);
// Checks that `db` is a trainwatch store this binary can read (for read-only opens).
Status CheckOurs(Db& db);

}  // namespace tw::store

#include "store/migrations.h"

#include <cstdlib>

namespace tw::store {
namespace {

int VersionOf(const EmbeddedSql& m) { return std::atoi(m.name); }

Result<int64_t> QueryInt(Db& db, const char* sql) {
  Result<Stmt> s = db.Prepare(sql);
  if (!s.ok()) return s.status();
  Result<bool> row = s->Step();
  if (!row.ok()) return row.status();
  return *row ? s->Int(0) : int64_t{0};
}

}  // namespace

int LatestSchemaVersion() {
  int v = 0;
  for (const auto& m : EmbeddedMigrations()) v = std::max(v, VersionOf(m));
  return v;
}

Status CheckOurs(Db& db) {
  Result<int64_t> version = QueryInt(db, "PRAGMA user_version");
  if (!version.ok()) {
    return Status(Code::kNotOurs, db.path() + ": not a trainwatch database (" +
                                      version.status().message() + ")");
  }
  Result<int64_t> ours = QueryInt(
      db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'");
  if (!ours.ok() || *ours == 0) {
    return Status(Code::kNotOurs, db.path() +
                                      ": not a trainwatch database (no trainwatch meta table)");
  }
  Result<int64_t> app = QueryInt(
      db, "SELECT count(*) FROM meta WHERE key='application' AND value='trainwatch'");
  if (!app.ok() || *app == 0)
    return Status(Code::kNotOurs, db.path() + ": not a trainwatch database");
  if (*version > LatestSchemaVersion()) {
    return Status(Code::kNotOurs, db.path() + ": schema version " + std::to_string(*version) +
                                      " is newer than this trainwatch knows (" +
                                      std::to_string(LatestSchemaVersion()) + "); upgrade trainwatch");
  }
  return Status::Ok();
}

Status Migrate(Db& db) {
  Result<int64_t> version = QueryInt(db, "PRAGMA user_version");
  if (!version.ok()) {
    return Status(Code::kNotOurs,
                  db.path() + ": not a trainwatch database (" + version.status().message() + ")");
  }
  if (*version == 0) {
    Result<int64_t> tables = QueryInt(db, "SELECT count(*) FROM sqlite_master");
    if (!tables.ok()) return tables.status();
    if (*tables > 0)
      return Status(Code::kNotOurs,
                    db.path() + ": not a trainwatch database (it holds other tables); "
                                "refusing to write to it");
  } else {
    TW_RETURN_IF_ERROR(CheckOurs(db));
  }
  for (const auto& m : EmbeddedMigrations()) {
    const int v = VersionOf(m);
    if (v <= *version) continue;
    TW_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
    Status st = db.Exec(m.sql);
    if (st.ok()) st = db.Exec("PRAGMA user_version = " + std::to_string(v));
    if (!st.ok()) {
      (void)db.Exec("ROLLBACK");
      return Status(st.code(), std::string("migration ") + m.name + " failed: " + st.message());
    }
    TW_RETURN_IF_ERROR(db.Exec("COMMIT"));
  }
  return Status::Ok();
}

}  // namespace tw::store

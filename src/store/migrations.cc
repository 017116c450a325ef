#include "store/migrations.h"

#include <cstdlib>
#include <optional>

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

// Why a store could not be read, when it is not that it is not ours: a corrupt store, one on
// read-only media that SQLite cannot open, a failing disk. Each says so, under its own code.
std::optional<Status> Unreadable(Db& db, const Status& st) {
  switch (st.code()) {
    case Code::kCorrupt:
      return Status(Code::kCorrupt, db.path() + ": the store is corrupt (" + st.message() + ")");
    case Code::kReadOnly:
      return Status(Code::kReadOnly, db.path() + ": cannot read the store where it is: its file, directory or "
                                                 "mount is read-only (" + st.message() + ")");
    case Code::kIo:
      return Status(Code::kIo, db.path() + ": cannot read the store (" + st.message() + ")");
    default:
      return std::nullopt;
  }
}

// Migrate's work inside its transaction: the checks on what the store holds, then every
// migration it lacks, in order. All or nothing: a failed step leaves the store as it was.
Status MigrateLocked(Db& db) {
  Result<int64_t> version = QueryInt(db, "PRAGMA user_version");
  if (!version.ok()) {
    if (auto st = Unreadable(db, version.status())) return *st;
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
    Status st = db.Exec(m.sql);
    if (st.ok()) st = db.Exec("PRAGMA user_version = " + std::to_string(v));
    if (!st.ok()) return Status(st.code(), std::string("migration ") + m.name + " failed: " + st.message());
  }
  return Status::Ok();
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
    if (auto st = Unreadable(db, version.status())) return *st;
    return Status(Code::kNotOurs, db.path() + ": not a trainwatch database (" +
                                      version.status().message() + ")");
  }
  Result<int64_t> ours = QueryInt(
      db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'");
  if (!ours.ok())
    if (auto st = Unreadable(db, ours.status())) return *st;
  if (!ours.ok() || *ours == 0) {
    return Status(Code::kNotOurs, db.path() +
                                      ": not a trainwatch database (no trainwatch meta table)");
  }
  Result<int64_t> app = QueryInt(
      db, "SELECT count(*) FROM meta WHERE key='application' AND value='trainwatch'");
  if (!app.ok())
    if (auto st = Unreadable(db, app.status())) return *st;
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
  // Already current: reading only, so a daemon starts while another process holds the write
  // lock (a long query's transaction, a backup).
  Result<int64_t> version = QueryInt(db, "PRAGMA user_version");
  if (!version.ok()) {
    if (auto st = Unreadable(db, version.status())) return *st;
    return Status(Code::kNotOurs,
                  db.path() + ": not a trainwatch database (" + version.status().message() + ")");
  }
  if (*version >= LatestSchemaVersion()) return CheckOurs(db);
  // Creating or upgrading: one process at a time, and the version read again once the write
  // lock is ours. Two processes creating a new store both see version 0 here; the second to
  // get the lock must see the first one's schema (and apply nothing), not create it again.
  TW_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  Status st = MigrateLocked(db);
  if (!st.ok()) {
    (void)db.Exec("ROLLBACK");
    return st;
  }
  return db.Exec("COMMIT");
}
}  // namespace tw::store

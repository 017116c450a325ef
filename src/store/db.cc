#include "store/db.h"

#include <cstdio>

namespace tw::store {

namespace {

// SQLite's verdict as a Code: what the daemon and the CLI tell apart (docs/errors.md).
Code CodeOf(int rc) {
  switch (rc & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR: return Code::kIo;
    case SQLITE_CORRUPT: return Code::kCorrupt;
    case SQLITE_NOTADB: return Code::kNotOurs;
    case SQLITE_READONLY: return Code::kReadOnly;
    default: return Code::kInternal;
  }
}

}  // namespace

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (s_) sqlite3_finalize(s_);
    db_ = o.db_;
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

Stmt::~Stmt() {
  if (s_) sqlite3_finalize(s_);
}

Result<bool> Stmt::Step() {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Status st(CodeOf(rc), std::string("sqlite: ") + sqlite3_errmsg(db_) + " (in: " +
                      (sqlite3_sql(s_) ? std::string(sqlite3_sql(s_)).substr(0, 80) : "?") + ")");
  sqlite3_reset(s_);
  return st;
}

Status Stmt::Run() {
  Result<bool> r = Step();
  sqlite3_reset(s_);
  return r.status();
}

std::string Stmt::Text(int col) const {
  const auto* p = sqlite3_column_text(s_, col);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<size_t>(sqlite3_column_bytes(s_, col)))
           : std::string();
}

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, Mode mode) {
  sqlite3* raw = nullptr;
  const int flags = mode == Mode::kReadWrite ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                    : mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY
                                              : SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
  std::string name = path;
  if (mode == Mode::kImmutable) {
    name = "file:";
    for (const char c : path) {  // a URI: escape what would end or bend the path
      if (c == '?' || c == '#' || c == '%') {
        char hex[4];
        std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
        name += hex;
      } else {
        name += c;
      }
    }
    name += "?immutable=1";
  }
  const int rc = sqlite3_open_v2(name.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return Status(mode != Mode::kReadWrite ? Code::kNotFound : Code::kIo,
                  path + ": cannot open database: " + msg);
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 5000);
  return std::unique_ptr<Db>(new Db(raw, path));
}

Db::~Db() { sqlite3_close_v2(db_); }

Status Db::Error(std::string_view what) const {
  return Status(CodeOf(sqlite3_extended_errcode(db_)), path_ + ": " + std::string(what) + ": " + sqlite3_errmsg(db_));
}

Status Db::Exec(std::string_view sql) {
  std::string s(sql);
  char* err = nullptr;
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    Status st = Error("exec");
    sqlite3_free(err);
    return st;
  }
  return Status::Ok();
}

Result<Stmt> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                         &s, nullptr) != SQLITE_OK) {
    return Error("prepare \"" + std::string(sql.substr(0, 60)) + "\"");
  }
  return Stmt(db_, s);
}

}  // namespace tw::store

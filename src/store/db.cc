#include "store/db.h"

namespace tw::store {

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
  Code code = (rc == SQLITE_FULL || rc == SQLITE_IOERR || (rc & 0xff) == SQLITE_IOERR) ? Code::kIo
                                                                                       : Code::kInternal;
  Status st(code, std::string("sqlite: ") + sqlite3_errmsg(db_) + " (in: " +
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
  const int flags = mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY
                                            : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    sqlite3_close(raw);
    return Status(mode == Mode::kReadOnly ? Code::kNotFound : Code::kIo,
                  path + ": cannot open database: " + msg);
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 5000);
  return std::unique_ptr<Db>(new Db(raw, path));
}

Db::~Db() { sqlite3_close_v2(db_); }

Status Db::Error(std::string_view what) const {
  const int rc = sqlite3_errcode(db_);
  Code code = (rc & 0xff) == SQLITE_FULL || (rc & 0xff) == SQLITE_IOERR ? Code::kIo
              : (rc & 0xff) == SQLITE_NOTADB                           ? Code::kNotOurs
                                                                       : Code::kInternal;
  return Status(code, path_ + ": " + std::string(what) + ": " + sqlite3_errmsg(db_));
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

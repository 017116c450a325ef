// A thin RAII layer over the SQLite C API: a connection and prepared statements, errors as
// Status values that carry SQLite's message. Not thread-safe: each connection has one owner.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tw::store {

class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  Stmt(Stmt&& o) noexcept : db_(o.db_), s_(o.s_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  ~Stmt();

  // Binding is 1-based as in SQLite. Bind errors surface at Step().
  Stmt& Bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); return *this; }
  Stmt& Bind(int i, double v) { sqlite3_bind_double(s_, i, v); return *this; }
  Stmt& Bind(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& BindBlob(int i, const void* p, size_t n) {
    sqlite3_bind_blob(s_, i, p, static_cast<int>(n), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& BindNull(int i) { sqlite3_bind_null(s_, i); return *this; }

  // One step: true when a row is available, false when done.
  Result<bool> Step();
  // Steps a statement that returns no rows to completion, then resets it.
  Status Run();
  // Steps through every row, calling `row()` at each; the step's error, if any.
  template <typename F>
  Status EachRow(F&& row) {
    for (;;) {
      Result<bool> more = Step();
      if (!more.ok()) return more.status();
      if (!*more) return Status::Ok();
      row();
    }
  }
  void Reset() { sqlite3_reset(s_); }

  int64_t Int(int col) const { return sqlite3_column_int64(s_, col); }
  double Real(int col) const { return sqlite3_column_double(s_, col); }
  std::string Text(int col) const;
  bool IsNull(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  int ColumnCount() const { return sqlite3_column_count(s_); }
  int ColumnType(int col) const { return sqlite3_column_type(s_, col); }
  const char* ColumnName(int col) const { return sqlite3_column_name(s_, col); }
  sqlite3_stmt* raw() const { return s_; }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* s_ = nullptr;
};

class Db {
 public:
  // kImmutable: read-only without any locking or -shm file, for a store on read-only media
  // (nothing can be writing it); what only its -wal file holds is not seen.
  enum class Mode { kReadWrite, kReadOnly, kImmutable };
  static Result<std::unique_ptr<Db>> Open(const std::string& path, Mode mode);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Status Exec(std::string_view sql);  // one or more statements, no results
  Result<Stmt> Prepare(std::string_view sql);
  Status Error(std::string_view what) const;  // a Status from the connection's last error
  int64_t Changes() const { return sqlite3_changes64(db_); }
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  const std::string& path() const { return path_; }
  sqlite3* raw() const { return db_; }

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

}  // namespace tw::store

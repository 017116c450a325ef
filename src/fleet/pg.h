// A thin RAII layer over libpq: one connection, statements with text parameters, COPY FROM
// STDIN streamed in chunks, errors as Status values carrying PostgreSQL's message (never the
// connection string: it may hold a password). Not thread-safe: each connection has one owner.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tw::fleet {

// What a statement returned: rows of text values (NULL as nullopt).
struct PgRows {
  std::vector<std::vector<std::optional<std::string>>> rows;
  int64_t affected = 0;  // INSERT/UPDATE/DELETE: rows touched
};

class Pg {
 public:
  // `conninfo`: a libpq URI (postgresql://...) or key=value string; `password`, when not empty,
  // is passed beside it (never put into the string). Connects with a timeout and TCP keepalives
  // unless the conninfo sets its own, so a dead server is an error, not a hang.
  static Result<std::unique_ptr<Pg>> Connect(const std::string& conninfo, const std::string& password,
                                             const std::string& application_name);
  ~Pg();
  Pg(const Pg&) = delete;
  Pg& operator=(const Pg&) = delete;

  // One statement (or several, without parameters), no rows expected.
  Status Exec(std::string_view sql);
  Result<PgRows> Query(const std::string& sql, const std::vector<std::optional<std::string>>& params = {});
  // COPY ... FROM STDIN: `fill` appends COPY text to its buffer and returns false when done;
  // the buffer is sent whenever it passes 1 MiB. Returns the rows copied.
  Result<int64_t> CopyIn(const std::string& copy_sql, const std::function<Result<bool>(std::string*)>& fill);
  // Whether the connection is still usable (a server restart breaks it).
  bool ok() const { return PQstatus(conn_) == CONNECTION_OK; }

 private:
  explicit Pg(PGconn* c) : conn_(c) {}
  Status Error(std::string_view what) const;
  PGconn* conn_;
};

// Appends `v` to a COPY text row, escaped (backslash, tab, newline, carriage return).
void CopyText(std::string_view v, std::string* out);
// A bytea value as COPY text: \\x and hex digits.
void CopyBytea(const void* p, size_t n, std::string* out);
// A double as COPY text, exactly (%.17g; Infinity, -Infinity, NaN spelt as PostgreSQL reads them).
void CopyDouble(double v, std::string* out);

}  // namespace tw::fleet

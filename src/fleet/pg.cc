#include "fleet/pg.h"

#include <cmath>
#include <cstdio>

namespace tw::fleet {

namespace {

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result<std::unique_ptr<Pg>> Pg::Connect(const std::string& conninfo, const std::string& password,
                                        const std::string& application_name) {
  // The conninfo goes in as "dbname" with expand_dbname, so a URI or key=value string is
  // expanded. Later keywords override earlier ones: our defaults come first, so the user's
  // string overrides them, and the password (kept out of that string) last.
  std::vector<const char*> keys = {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                                   "keepalives_count", "application_name", "dbname"};
  std::vector<const char*> values = {"10", "1", "10", "5", "3", application_name.c_str(), conninfo.c_str()};
  if (!password.empty()) {
    keys.push_back("password");
    values.push_back(password.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* c = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (!c) return Status(IoError("PostgreSQL: out of memory"));
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = Trim(PQerrorMessage(c));
    PQfinish(c);
    return Status(IoError("PostgreSQL: cannot connect: " + msg));
  }
  // Notices ("relation already exists, skipping") are not errors: not printed on stderr.
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<Pg>(new Pg(c));
}

Pg::~Pg() { PQfinish(conn_); }

Status Pg::Error(std::string_view what) const {
  return IoError("PostgreSQL: " + std::string(what) + ": " + Trim(PQerrorMessage(conn_)));
}

Status Pg::Exec(std::string_view sql) {
  PgResult r(PQexec(conn_, std::string(sql).c_str()));
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return Error("statement failed");
  return Status::Ok();
}

Result<PgRows> Pg::Query(const std::string& sql, const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  PgResult r(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                          nullptr, 0));
  const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return Error("query failed");
  PgRows out;
  const int n = PQntuples(r.get()), cols = PQnfields(r.get());
  for (int i = 0; i < n; ++i) {
    auto& row = out.rows.emplace_back();
    for (int j = 0; j < cols; ++j) {
      if (PQgetisnull(r.get(), i, j)) row.emplace_back(std::nullopt);
      else row.emplace_back(std::string(PQgetvalue(r.get(), i, j), PQgetlength(r.get(), i, j)));
    }
  }
  const char* affected = PQcmdTuples(r.get());
  if (affected && *affected) out.affected = std::stoll(affected);
  return out;
}

Result<int64_t> Pg::CopyIn(const std::string& copy_sql, const std::function<Result<bool>(std::string*)>& fill) {
  {
    PgResult r(PQexec(conn_, copy_sql.c_str()));
    if (!r || PQresultStatus(r.get()) != PGRES_COPY_IN) return Error("COPY failed to start");
  }
  std::string buf;
  Status failed;
  for (bool more = true; more;) {
    Result<bool> got = fill(&buf);
    if (!got.ok()) {
      failed = got.status();
      break;
    }
    more = *got;
    if (buf.size() >= (1 << 20) || (!more && !buf.empty())) {
      if (PQputCopyData(conn_, buf.data(), static_cast<int>(buf.size())) != 1) return Error("COPY data");
      buf.clear();
    }
  }
  if (PQputCopyEnd(conn_, failed.ok() ? nullptr : "trainwatch: reading the local store failed") != 1)
    return Error("COPY end");
  PgResult r(PQgetResult(conn_));
  const bool ok = r && PQresultStatus(r.get()) == PGRES_COMMAND_OK;
  int64_t rows = 0;
  if (ok && PQcmdTuples(r.get())[0]) rows = std::stoll(PQcmdTuples(r.get()));
  while (PGresult* more = PQgetResult(conn_)) PQclear(more);
  if (!failed.ok()) return failed;
  if (!ok) return Error("COPY");
  return rows;
}

void CopyText(std::string_view v, std::string* out) {
  for (char c : v) {
    switch (c) {
      case '\\': out->append("\\\\"); break;
      case '\t': out->append("\\t"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      default: out->push_back(c);
    }
  }
}

void CopyBytea(const void* p, size_t n, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  out->append("\\\\x");
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    out->push_back(kHex[b[i] >> 4]);
    out->push_back(kHex[b[i] & 15]);
  }
}

void CopyDouble(double v, std::string* out) {
  if (std::isnan(v)) {
    out->append("NaN");
  } else if (std::isinf(v)) {
    out->append(v > 0 ? "Infinity" : "-Infinity");
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out->append(buf);
  }
}

}  // namespace tw::fleet

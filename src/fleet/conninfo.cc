// The connection string's checks and its description for messages, which never show a password.
#include <libpq-fe.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "fleet/fleet.h"
#include "fleet/pg.h"
#include "fleet/schema.h"

namespace tw::fleet {

namespace {

struct Options {
  PQconninfoOption* opts = nullptr;
  std::string error;
  explicit Options(const std::string& conninfo) {
    char* err = nullptr;
    opts = PQconninfoParse(conninfo.c_str(), &err);
    if (err) {
      error = err;
      PQfreemem(err);
      while (!error.empty() && (error.back() == '\n' || error.back() == ' ')) error.pop_back();
    }
  }
  ~Options() { PQconninfoFree(opts); }
};

}  // namespace

Status CheckConninfo(const std::string& conninfo) {
  if (conninfo.empty()) return InvalidArgument("the PostgreSQL connection string is empty");
  Options o(conninfo);
  // libpq's message may quote the string, password and all: say only that it did not parse.
  if (!o.opts)
    return InvalidArgument("the PostgreSQL connection string does not parse (expected postgresql://USER@HOST:PORT/DB"
                           "?sslmode=... or key=value pairs)");
  return Status::Ok();
}

std::string DescribeConninfo(const std::string& conninfo) {
  Options o(conninfo);
  if (!o.opts) return "(a connection string that does not parse)";
  std::string out;
  for (const std::string k : {"host", "hostaddr", "port", "dbname", "user", "sslmode"})
    for (PQconninfoOption* p = o.opts; p->keyword; ++p)
      if (k == p->keyword && p->val && *p->val) out += (out.empty() ? "" : " ") + k + "=" + p->val;
  return out.empty() ? "(libpq's defaults)" : out;
}

bool ConninfoHasPassword(const std::string& conninfo) {
  Options o(conninfo);
  if (!o.opts) return false;
  for (PQconninfoOption* p = o.opts; p->keyword; ++p)
    if (std::string(p->keyword) == "password" && p->val && *p->val) return true;
  return false;
}

std::string LocalHostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  return name;
}

Status MigrateFleet(const FleetOptions& options) {
  Result<std::unique_ptr<Pg>> pg = Pg::Connect(options.conninfo, options.password, "trainwatch");
  if (!pg.ok()) return pg.status();
  return Migrate(**pg);
}

}  // namespace tw::fleet

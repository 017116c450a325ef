#include "support/postgres_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "fleet/pg.h"

namespace tw::testing {

namespace fs = std::filesystem;

namespace {

bool HasServer(const fs::path& dir) {
  return fs::exists(dir / "initdb") && fs::exists(dir / "pg_ctl") && fs::exists(dir / "postgres");
}

// A port nothing listens on now: bound (port 0) and released. Another process could take it
// before the server does; initdb's tests live with the same race.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0)
    throw std::runtime_error("no free port on 127.0.0.1");
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

std::string PostgresServer::BinDir() {
  std::error_code ec;
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec))
    if (HasServer(e.path() / "bin")) found.push_back(e.path() / "bin");
  if (!found.empty()) {
    std::sort(found.begin(), found.end());
    return found.back().native();  // the newest
  }
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  for (size_t at = 0; at <= p.size();) {
    size_t colon = p.find(':', at);
    if (colon == std::string::npos) colon = p.size();
    const fs::path dir = p.substr(at, colon - at);
    if (!dir.empty() && HasServer(dir)) return dir.native();
    at = colon + 1;
  }
  return "";
}

std::string PostgresServer::Run(const std::string& command) const {
  // As root, the server's user is nobody (initdb and postgres refuse root); it owns the directory.
  const std::string as = ::geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups -- " : "";
  const std::string out = dir_ / "command.out";
  const std::string full = "cd " + dir_.path() + " && " + as + command + " > " + out + " 2>&1";
  const int rc = std::system(full.c_str());
  if (rc != 0)
    throw std::runtime_error("`" + command + "` failed (" + std::to_string(rc) + "): " + ReadFile(out) +
                             "\nserver log: " + Log());
  return ReadFile(out);
}

PostgresServer::PostgresServer() : bin_(BinDir()), data_(dir_ / "data"), log_(dir_ / "server.log") {
  if (bin_.empty()) throw std::runtime_error("PostgreSQL is not installed");
  if (::geteuid() == 0 && ::chown(dir_.path().c_str(), 65534, 65534) != 0)
    throw std::runtime_error("cannot chown " + dir_.path() + " to nobody");
  Run(bin_ + "/initdb -D " + data_ + " -U tw --auth=trust --no-sync -E UTF8 --locale=C");
  port_ = FreePort();
  WriteFile(data_ + "/postgresql.auto.conf",
            "listen_addresses = '127.0.0.1'\nport = " + std::to_string(port_) + "\nunix_socket_directories = '" +
                dir_.path() + "'\nfsync = off\nmax_connections = 40\n");
  Start();
}

PostgresServer::~PostgresServer() {
  if (running_) {
    try {
      Run(bin_ + "/pg_ctl stop -D " + data_ + " -m immediate -w");
    } catch (...) {
    }
  }
}

void PostgresServer::Start() {
  Run(bin_ + "/pg_ctl start -D " + data_ + " -l " + log_ + " -w -t 30");
  running_ = true;
}

void PostgresServer::Stop() {
  Run(bin_ + "/pg_ctl stop -D " + data_ + " -m fast -w -t 30");
  running_ = false;
}

std::string PostgresServer::conninfo(const std::string& db) const {
  return "host=" + dir_.path() + " port=" + std::to_string(port_) + " user=tw dbname=" + db;
}

std::string PostgresServer::tcp_conninfo(const std::string& db) const {
  return "postgresql://tw@127.0.0.1:" + std::to_string(port_) + "/" + db;
}

std::vector<std::string> PostgresServer::Query(const std::string& sql, const std::string& db) const {
  Result<std::unique_ptr<fleet::Pg>> pg = fleet::Pg::Connect(conninfo(db), "", "trainwatch tests");
  if (!pg.ok()) throw std::runtime_error(pg.status().message());
  Result<fleet::PgRows> rows = (*pg)->Query(sql);
  if (!rows.ok()) throw std::runtime_error(rows.status().message() + " in: " + sql);
  std::vector<std::string> out;
  for (const auto& r : rows->rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) line += (i ? "|" : "") + (r[i] ? *r[i] : std::string("\\N"));
    out.push_back(line);
  }
  return out;
}

void PostgresServer::CreateDatabase(const std::string& name) const { Query("CREATE DATABASE " + name); }

std::string PostgresServer::Log() const {
  std::error_code ec;
  return fs::exists(log_, ec) ? ReadFile(log_) : "";
}

}  // namespace tw::testing

// `trainwatch web`: the web view of a store (docs/web.md), served until SIGINT or
// SIGTERM.
#include <signal.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/flags.h"
#include "store/store.h"
#include "web/access.h"
#include "web/server.h"

namespace tw::cli {
namespace {

constexpr const char* kWebHelp = R"(usage: trainwatch web --db FILE [--listen ADDR:PORT] [--token T | --token-file F]

Serves the web view of the store (docs/web.md): its pages at / and their JSON API under /api/,
until SIGINT or SIGTERM. It reads through read-only connections and never blocks the daemon
writing the store; its one write is a silence added from the deliveries page.

  --db FILE         the store
  --listen ADDR:PORT  where to listen (default 127.0.0.1:8421; [::1]:8421 for IPv6; port 0: any)
  --token T         required from every client: "Authorization: Bearer T", or a ?token=T link
                    that sets a cookie. Needed to listen beyond loopback.
  --token-file F    the token from a file (its first line), kept out of the process list
)";


}  // namespace

int CmdWeb(const Args& args) {
  Flags f(args, {"db", "listen", "token", "token-file"}, {"help"});
  if (f.Has("help")) return Usage(kWebHelp);
  if (!f.error().empty()) return Usage(kWebHelp, f.error());
  if (!f.Has("db")) return Usage(kWebHelp, "web needs --db FILE");
  if (f.Has("token") && f.Has("token-file")) return Usage(kWebHelp, "give --token or --token-file, not both");
  web::WebOptions options;
  options.db_path = *f.Get("db");
  if (!web::ParseListen(f.Get("listen").value_or("127.0.0.1:8421"), &options.address, &options.port))
    return Usage(kWebHelp, "--listen needs ADDR:PORT, got '" + *f.Get("listen") + "'");
  if (f.Has("token")) options.token = *f.Get("token");
  if (f.Has("token-file")) {
    std::ifstream in(*f.Get("token-file"));
    if (!in || !std::getline(in, options.token) || options.token.empty()) {
      std::cerr << "trainwatch: cannot read a token from " << *f.Get("token-file") << "\n";
      return 1;
    }
    if (options.token.back() == '\r') options.token.pop_back();
  }
  if (Status s = web::CheckListen(options.address, options.token); !s.ok()) {
    std::cerr << "trainwatch: " << s.message() << "\n";
    return 2;
  }
  // The store must be ours and readable before anyone is told where to look.
  Result<std::unique_ptr<store::Db>> db = store::OpenReadOnly(options.db_path);
  if (!db.ok()) return StoreFailure(db.status());
  db->reset();

  // Blocked here, before the server's threads start, so they inherit the mask and only
  // sigwait below sees the signal.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  web::WebServer server;
  const std::string address = options.address, token = options.token;
  if (Status s = server.Start(std::move(options)); !s.ok()) {
    std::cerr << "trainwatch: " << s.message() << "\n";
    return s.code() == Code::kInvalidArgument ? 2 : 1;
  }
  const std::string host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  std::cout << "trainwatch web: serving http://" << host << ":" << server.port() << "/"
            << (token.empty() ? "" : " (token required)") << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  server.Stop();
  return 0;
}

}  // namespace tw::cli

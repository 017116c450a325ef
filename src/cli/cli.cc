#include "cli/cli.h"

#include <exception>
#include <iostream>
#include <string>

#include "cli/commands.h"

namespace tw::cli {
namespace {

constexpr const char* kHelp = R"(trainwatch: a training-run doctor for TensorBoard and W&B logdirs and console logs.

usage: trainwatch COMMAND [options]

commands:
  daemon   watch logdirs and ingest continuously (the service)
  status   what a daemon is doing: roots, runs, files, lag, recent errors
  ingest   read logdirs into a SQLite store once and exit
  query    run SQL against a store (read-only) and print table, CSV or JSON
  runs     list the runs in a store
  diagnose run the diagnosis rules once and print verdicts and findings
  findings what the daemon's diagnosis found: firing now, resolved recently
  roles    what each run's tags mean to the rules (train_loss, lr, ...)
  rules    the diagnosis rules, their parameters and where they come from
  profiles the console-log profiles, and what they read in a log (--test FILE)
  notify   `notify test`: send a sample finding to each channel, print the answers
  silence  add, list or expire silences (no notifications for matching findings)
  web      serve a read-only JSON view of a store over HTTP (docs/web.md)
  fleet    `fleet status`: the hosts shipping to one PostgreSQL, their lag and roots (docs/fleet.md)
  help     this text

`trainwatch COMMAND --help` explains each command.
)";

}  // namespace

int Main(int argc, char** argv) {
  try {
    if (argc < 2) {
      std::cerr << kHelp;
      return 2;
    }
    const std::string cmd = argv[1];
    const Args rest(argv + 2, argv + argc);
    if (cmd == "ingest") return CmdIngest(rest);
    if (cmd == "query") return CmdQuery(rest);
    if (cmd == "runs") return CmdRuns(rest);
    if (cmd == "daemon") return CmdDaemon(rest);
    if (cmd == "status") return CmdStatus(rest);
    if (cmd == "diagnose") return CmdDiagnose(rest);
    if (cmd == "findings") return CmdFindings(rest);
    if (cmd == "roles") return CmdRoles(rest);
    if (cmd == "rules") return CmdRules(rest);
    if (cmd == "notify") return CmdNotify(rest);
    if (cmd == "silence") return CmdSilence(rest);
    if (cmd == "profiles") return CmdProfiles(rest);
    if (cmd == "web") return CmdWeb(rest);
    if (cmd == "fleet") return CmdFleet(rest);
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      std::cout << kHelp;
      return 0;
    }
    if (cmd == "--version") {
      std::cout << "trainwatch 0.1.0\n";
      return 0;
    }
    std::cerr << "trainwatch: unknown command '" << cmd << "'\n\n" << kHelp;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "trainwatch: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tw::cli

// One function per CLI command. Each takes its own arguments (after the command name) and
// returns the process exit code: 0 success, 1 failure, 2 usage error; a store that cannot be
// read says why with its own code (StoreFailure).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace tw::cli {

using Args = std::vector<std::string>;

int CmdIngest(const Args& args);
int CmdQuery(const Args& args);
int CmdRuns(const Args& args);
int CmdDaemon(const Args& args);
int CmdStatus(const Args& args);
int CmdDiagnose(const Args& args);
int CmdFindings(const Args& args);
int CmdRoles(const Args& args);
int CmdRules(const Args& args);
int CmdNotify(const Args& args);
int CmdSilence(const Args& args);
int CmdProfiles(const Args& args);
int CmdWeb(const Args& args);
int CmdFleet(const Args& args);

// Prints "trainwatch: <why>" for a store that could not be opened or read, and returns the exit
// code for it (docs/errors.md): 65 corrupt, 73 unreadable where it is (read-only media that
// SQLite cannot open even as immutable), 1 anything else (missing, not ours, ...).
int StoreFailure(const Status& st);

}  // namespace tw::cli

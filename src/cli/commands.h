// One function per CLI command. Each takes its own arguments (after the command name) and
// returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

#include <string>
#include <vector>

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

}  // namespace tw::cli

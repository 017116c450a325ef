// `trainwatch diagnose --explain RUN`: per run, the roles its tags play and the checks that
// cannot run on it, each with the role (and example tags) that would enable it. Called on the
// CLI's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "diagnose/roles.h"
#include "diagnose/rule.h"

namespace tw::cli {

// `map`: the role map of the runs to explain (its subjects, in order); `names`: run id to name;
// `facts`: run id to the run fact views (diagnose::RunFactViews) it has a row in; `rules`: the
// rules that would run (built-ins and the rules directory's); `disabled`: their ids turned off
// by the config. The text ends with a newline.
std::string ExplainRuns(const diagnose::RoleMap& map, const std::map<int64_t, std::string>& names,
                        const std::map<int64_t, std::set<std::string>>& facts,
                        const std::vector<diagnose::Rule>& rules, const std::set<std::string>& disabled);

}  // namespace tw::cli

// trainwatch diagnose --explain RUN: which checks can judge a run, and for those that cannot,
// which role (and so which kind of tag) the run would have to log. A check that finds nothing
// because the run lacks what it reads is silent, which a user could take for health.
#include "cli/diagnose_explain.h"

#include <map>
#include <set>
#include <sstream>

#include "diagnose/role_inference.h"
#include "diagnose/roles.h"
#include "diagnose/rule.h"

namespace tw::cli {
namespace {

// Up to three of the built-in patterns' tags for `role`, as examples of what to log.
std::string ExampleTags(const std::string& role) {
  std::string out;
  int n = 0;
  for (const diagnose::RolePattern& p : diagnose::DefaultRolePatterns()) {
    if (p.role != role || !p.run_glob.empty() || p.tag_glob.find_first_of("*?[") != std::string::npos) continue;
    if (n == 3) return out + ", ...";  // more than three: say so
    out += (n ? ", '" : "'") + p.tag_glob + "'";
    ++n;
  }
  // Roles that only inference names (their tags vary too much for exact patterns).
  for (const std::string& tag : diagnose::InferredExampleTags(role)) out += (out.empty() ? "'" : ", '") + tag + "'";
  return out;
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// What a run lacks for a row in each of the fact views `views` names.
std::vector<std::string> MissingFacts(const std::vector<std::string>& views, const std::set<std::string>& have) {
  std::vector<std::string> out;
  for (const std::string& v : views)
    if (!have.count(v))
      for (const diagnose::RunFactView& f : diagnose::RunFactViews())
        if (f.name == v) out.push_back(f.what);
  return out;
}

// What `rule` lacks on a run with roles `have`: "needs X" / "needs X or Y", with examples;
// "needs a class count ... in its hyperparameters" for a fact it lacks.
std::string Missing(const diagnose::Rule& rule, const std::set<std::string>& have,
                    const std::set<std::string>& facts) {
  const std::vector<std::string> no_fact = MissingFacts(rule.needs_rows, facts);
  if (rule.CanRunWith(have)) return "needs " + Join(no_fact, ", and ");
  std::vector<std::string> lacks;
  for (const std::string& r : rule.roles)
    if (!have.count(r)) lacks.push_back(r);
  bool any_missing = !rule.roles_any.empty();
  for (const std::string& r : rule.roles_any) any_missing &= !have.count(r);
  std::string need = Join(lacks, " and ");
  if (any_missing) need += (need.empty() ? "" : ", and ") + Join(rule.roles_any, " or ");
  std::vector<std::string> examples;
  for (const std::string& r : lacks)
    if (std::string e = ExampleTags(r); !e.empty()) examples.push_back(r + ": " + e);
  if (any_missing)
    for (const std::string& r : rule.roles_any)
      if (std::string e = ExampleTags(r); !e.empty()) examples.push_back(r + ": " + e);
  std::string out = "needs " + need + (examples.empty() ? "" : " (tags such as " + Join(examples, "; ") + ")");
  return no_fact.empty() ? out : out + ", and " + Join(no_fact, ", and ");
}

}  // namespace

std::string ExplainRuns(const diagnose::RoleMap& map, const std::map<int64_t, std::string>& names,
                        const std::map<int64_t, std::set<std::string>>& facts,
                        const std::vector<diagnose::Rule>& rules, const std::set<std::string>& disabled) {
  static const std::set<std::string> kNone;
  std::map<int64_t, std::map<std::string, std::vector<std::string>>> roles;  // run -> role -> tags
  for (const auto& a : map.assignments) roles[a.run_id][a.role].push_back(a.label.empty() ? a.tag : a.label);
  std::ostringstream out;
  for (int64_t run : map.subjects) {
    const auto& found = roles[run];
    std::set<std::string> have;
    for (const auto& [role, tags] : found) have.insert(role);
    std::vector<std::string> can, cannot, off;
    const auto f = facts.find(run);
    const std::set<std::string>& has_facts = f == facts.end() ? kNone : f->second;
    for (const diagnose::Rule& r : rules) {
      if (disabled.count(r.id)) off.push_back(r.id);
      else if (r.CanRunWith(have) && MissingFacts(r.needs_rows, has_facts).empty()) can.push_back(r.id);
      else cannot.push_back(r.id + ": " + Missing(r, have, has_facts));
    }
    const auto name = names.find(run);
    out << "run " << (name == names.end() ? std::to_string(run) : name->second) << ": " << can.size() << " of "
        << can.size() + cannot.size() << " checks can run";
    if (!off.empty()) out << " (" << off.size() << " disabled: " << Join(off, ", ") << ")";
    out << "\n  roles found:";
    if (found.empty()) out << " none (no tag was recognised; `trainwatch roles` says how tags are read)";
    for (const auto& [role, tags] : found) out << "\n    " << role << ": " << Join(tags, ", ");
    out << "\n";
    if (cannot.empty()) {
      out << "  every check can run (each still needs enough points to judge)\n";
      continue;
    }
    out << "  cannot run (the run does not log what they read):\n";
    for (const std::string& c : cannot) out << "    " << c << "\n";
  }
  if (map.subjects.empty()) out << "no run matches\n";
  return out.str();
}

}  // namespace tw::cli

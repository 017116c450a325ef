// trainwatch diagnose | findings | roles: the diagnosis stage from the command line.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "base/clock.h"
#include "app/config.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/format.h"
#include "diagnose/engine.h"
#include "diagnose/report.h"
#include "diagnose/verdict.h"
#include "cli/console_log.h"
#include "cli/diagnose_explain.h"
#include "store/store.h"

namespace tw::cli {
namespace {

constexpr const char* kDiagnoseHelp = R"(usage: trainwatch diagnose --db FILE [options]
       trainwatch diagnose --log FILE|- [options]

Runs every diagnosis rule once over the runs in the store (read-only: safe beside a running
daemon) and prints, per run, a verdict (healthy, watch, kill), a loss forecast where a
power-law fit is good, and each finding: what was seen (series, steps, values), a sparkline
of the curve with the onset marked, the likely cause and the fix. Healthy runs are summed up
in the last line (markdown lists them).

With --log, FILE (or standard input, -) is a training's console output: a `nohup python
train.py > train.log`, a Slurm .out file, W&B's output.log, or lines pasted from a terminal.
Its metrics are read by the console profiles (`trainwatch profiles`) into a temporary store,
which is diagnosed and removed; the run is named by the file's name without its extension.

options:
  --db FILE         the store (--db or --log is required)
  --log FILE|-      diagnose a console log instead of a store
  --profiles-dir D  with --log: console profiles (*.toml) of your own, read before the built-ins
  --run GLOB        only runs whose name matches (e.g. 'exp_*'; default: all)
  --format F        text (default), json (one array: the stable contract), or markdown
  --config FILE     take [rules] and [roles] (thresholds, extra rules, tag patterns) from the
                    daemon's config file
  --rules-dir DIR   extra rules (*.sql), added to the built-ins (a same id replaces one)
  --set ID.PARAM=V  override one rule parameter (repeatable), e.g. loss_spikes.z=10
  --now SECONDS     evaluate as of this unix time (default: now; for stale-run checks)
  --timing          also print the time each rule took (on stderr), for rule authors
  --explain GLOB    instead of diagnosing, say per matching run which roles its tags play and
                    which checks cannot run on it, each with the role (and example tags) that
                    would enable it: a check without what it reads is silent, not a clean bill
  --help            this text

exit status: 0 when it ran (whatever it found), 1 when the store or a rule failed to load,
2 on a usage error.
)";

constexpr const char* kFindingsHelp = R"(usage: trainwatch findings --db FILE [--all] [--format table|csv|json]

Lists what the daemon's diagnosis has stored: findings firing or pending now, and those
resolved in the last 24 hours (--all: every finding ever). The table is also queryable as
the view finding_list.
)";

constexpr const char* kRolesHelp = R"(usage: trainwatch roles --db FILE [--run GLOB] [--config FILE] [--format table|csv|json]

Shows what each run's tags were mapped to (train_loss, val_loss, lr, grad_norm, ...), how
sure the mapping is (confidence 1.00: a pattern named the tag; below: inferred from the tag's
words and checked against its values), which way is better (higher or lower, for losses,
accuracies and scores) and why. Rules speak of roles; a tag with no role is not diagnosed.
Patterns in the config's [roles] section go first (role "ignore" takes tags out of every role).
)";

constexpr const char* kRulesHelp = R"(usage: trainwatch rules [--config FILE] [--rules-dir DIR] [--db FILE] [--verbose]

Lists the diagnosis rules that would run: id, severity, the roles a run needs, the
parameters with their values (defaults, or the config's), and where each comes from; the
config's [[alert]] tables among them, each with what it watches, its condition and its
file:line. --db FILE adds how many series each alert watches in that store now (an alert that
watches nothing is said so: a typo in its tag, or a tag not logged yet).
--verbose adds each rule's likely cause and fix. Rules that do not load are listed with why.
)";

// Options for the engine from --config, --rules-dir and --set.
bool EngineOptionsFrom(const Flags& f, diagnose::EngineOptions* out, std::string* error) {
  if (auto cfg = f.Get("config")) {
    Result<app::Config> c = app::LoadConfigFile(*cfg);
    if (!c.ok()) {
      *error = c.status().message();
      return false;
    }
    *out = c->rules;
  }
  if (auto dir = f.Get("rules-dir")) out->rules_dir = *dir;
  for (const std::string& s : f.GetAll("set")) {
    const size_t dot = s.find('.'), eq = s.find('=');
    if (dot == std::string::npos || eq == std::string::npos || eq < dot) {
      *error = "--set wants ID.PARAM=VALUE, got '" + s + "'";
      return false;
    }
    char* end = nullptr;
    const std::string v = s.substr(eq + 1);
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !std::isfinite(d)) {  // strtod reads "nan" and "inf"
      *error = "--set " + s + ": '" + v + "' is not a finite number";
      return false;
    }
    out->params[s.substr(0, dot)][s.substr(dot + 1, eq - dot - 1)] = d;
  }
  return true;
}

// The options' mistakes about rule ids and parameters, refused before the store is opened.
bool RuleConfigOk(const diagnose::EngineOptions& options) {
  const std::vector<std::string> errors = diagnose::ConfigErrors(options);
  for (const auto& e : errors) std::cerr << "trainwatch: " << e << "\n";
  return errors.empty();
}

// Run ids whose name matches `glob` (all when no glob).
Result<std::vector<int64_t>> RunsMatching(store::Db& db, const std::optional<std::string>& glob) {
  Result<store::Stmt> q = db.Prepare("SELECT run_id, name FROM runs ORDER BY name");
  if (!q.ok()) return q.status();
  std::vector<int64_t> ids;
  for (;;) {
    Result<bool> row = q->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    if (!glob || diagnose::GlobMatch(*glob, q->Text(1))) ids.push_back(q->Int(0));
  }
  return ids;
}

// diagnose --explain GLOB: the roles of each matching run and the checks it cannot feed.
int Explain(diagnose::Engine& engine, const std::string& glob, const diagnose::EngineOptions& options) {
  Result<std::vector<int64_t>> ids = RunsMatching(engine.db(), glob);
  Result<diagnose::RoleMap> map = ids.ok() ? engine.Roles(&*ids) : Result<diagnose::RoleMap>(ids.status());
  Result<store::Stmt> q = engine.db().Prepare("SELECT run_id, name FROM runs");
  if (!map.ok() || !q.ok()) {
    std::cerr << "trainwatch: " << (map.ok() ? q.status() : map.status()).message() << "\n";
    return 1;
  }
  std::map<int64_t, std::string> names;
  if (Status st = q->EachRow([&] { names[q->Int(0)] = q->Text(1); }); !st.ok()) {
    std::cerr << "trainwatch: " << st.message() << "\n";
    return 1;
  }
  // The run fact views Roles() created: which runs have a row in each.
  std::map<int64_t, std::set<std::string>> facts;
  for (const diagnose::RunFactView& v : diagnose::RunFactViews()) {
    Result<store::Stmt> f = engine.db().Prepare("SELECT DISTINCT run_id FROM temp." + v.name);
    Status st = f.ok() ? f->EachRow([&] { facts[f->Int(0)].insert(v.name); }) : f.status();
    if (!st.ok()) {
      std::cerr << "trainwatch: " << st.message() << "\n";
      return 1;
    }
  }
  std::vector<std::string> errors;  // Engine::Open reported them already
  const std::vector<diagnose::Rule> rules = diagnose::LoadRules(options.rules_dir, &errors);
  std::cout << ExplainRuns(*map, names, facts, rules, options.disabled);
  return 0;
}

}  // namespace

int CmdDiagnose(const Args& args) {
  Flags f(args, {"db", "log", "profiles-dir", "run", "format", "config", "rules-dir", "set", "now", "explain"},
          {"help", "timing"});
  if (f.Has("help")) return Usage(kDiagnoseHelp);
  if (!f.error().empty()) return Usage(kDiagnoseHelp, f.error());
  if (f.Has("db") == f.Has("log")) return Usage(kDiagnoseHelp, "diagnose needs --db FILE or --log FILE");
  if (f.Has("profiles-dir") && !f.Has("log"))
    return Usage(kDiagnoseHelp, "--profiles-dir goes with --log");
  diagnose::ReportFormat format = diagnose::ReportFormat::kText;
  if (auto fm = f.Get("format"); fm && !diagnose::ParseReportFormat(*fm, &format))
    return Usage(kDiagnoseHelp, "--format must be text, json or markdown");
  double now = UnixNow();
  if (auto n = f.Get("now")) {
    char* end = nullptr;
    now = std::strtod(n->c_str(), &end);
    if (n->empty() || *end) return Usage(kDiagnoseHelp, "--now must be unix seconds");
  }
  diagnose::EngineOptions options;
  std::string error;
  if (!EngineOptionsFrom(f, &options, &error)) return Usage(kDiagnoseHelp, error);
  if (!RuleConfigOk(options)) return 1;

  std::optional<TempStore> temp;
  std::string db_path = f.Get("db").value_or("");
  if (auto log = f.Get("log")) {
    Result<TempStore> made = IngestConsoleLog(*log, f.Get("profiles-dir").value_or(""));
    if (!made.ok()) {
      std::cerr << "trainwatch: " << made.status().message() << "\n";
      return 1;
    }
    temp.emplace(std::move(*made));
    db_path = temp->db;
  }
  Result<std::unique_ptr<diagnose::Engine>> engine = diagnose::Engine::Open(db_path, options);
  if (!engine.ok()) {
    std::cerr << "trainwatch: " << engine.status().message() << "\n";
    return 1;
  }
  for (const auto& e : (*engine)->load_errors()) std::cerr << "trainwatch: rule skipped: " << e << "\n";
  if (auto glob = f.Get("explain")) return Explain(**engine, *glob, options);
  Result<std::vector<int64_t>> runs = RunsMatching((*engine)->db(), f.Get("run"));
  if (!runs.ok()) {
    std::cerr << "trainwatch: " << runs.status().message() << "\n";
    return 1;
  }
  Result<diagnose::Evaluation> ev = (*engine)->Evaluate(&*runs, now);
  if (!ev.ok()) {
    std::cerr << "trainwatch: " << ev.status().message() << "\n";
    return 1;
  }
  std::cout << diagnose::RenderReport(*ev, (*engine)->db(), format);
  // The text report ends with its rule errors; JSON is the findings only, so they go here.
  if (format == diagnose::ReportFormat::kJson)
    for (const auto& e : ev->errors) std::cerr << "trainwatch: rule error: " << e << "\n";
  if (f.Has("timing")) {
    std::vector<std::pair<double, std::string>> by_cost;
    for (const auto& [rule, secs] : ev->rule_seconds) by_cost.emplace_back(secs, rule);
    std::sort(by_cost.rbegin(), by_cost.rend());
    for (const auto& [secs, rule] : by_cost)
      std::fprintf(stderr, "%9.3f s  %s\n", secs, rule.c_str());
  }
  return 0;
}

int CmdRules(const Args& args) {
  Flags f(args, {"config", "rules-dir", "set", "db"}, {"help", "verbose"});
  if (f.Has("help")) return Usage(kRulesHelp);
  if (!f.error().empty()) return Usage(kRulesHelp, f.error());
  diagnose::EngineOptions options;
  std::string error;
  if (!EngineOptionsFrom(f, &options, &error)) return Usage(kRulesHelp, error);
  std::vector<std::string> errors;
  const std::vector<diagnose::Rule> rules = diagnose::AllRules(options, &errors);
  // With a store: how many series each alert watches there now (the roles of every run mapped).
  std::map<std::string, int64_t> watched;
  if (auto db = f.Get("db"); db && !options.alerts.empty()) {
    Result<std::unique_ptr<diagnose::Engine>> engine = diagnose::Engine::Open(*db, options);
    Result<diagnose::RoleMap> map = engine.ok() ? (*engine)->Roles(nullptr) : Result<diagnose::RoleMap>(engine.status());
    Status st = map.ok() ? diagnose::WriteRoleTable((*engine)->db(), *map) : map.status();
    Result<std::map<std::string, int64_t>> counts = st.ok() ? (*engine)->AlertMatches() : Result<std::map<std::string, int64_t>>(st);
    if (!counts.ok()) {
      std::cerr << "trainwatch: " << counts.status().message() << "\n";
      return 1;
    }
    watched = std::move(*counts);
  }
  for (const auto& r : rules) {
    std::cout << r.id << "  [" << diagnose::SeverityName(r.severity) << "]"
              << (options.disabled.count(r.id) ? " (disabled)" : "") << "  " << r.title << "\n";
    if (r.alert) {
      auto a = std::find_if(options.alerts.begin(), options.alerts.end(),
                            [&](const diagnose::Alert& x) { return x.name == r.id; });
      std::cout << "    alert: " << diagnose::DescribeTarget(*a) << ": " << diagnose::DescribeCondition(*a)
                << (a->for_seconds > 0 ? ", held for " + std::to_string(std::llround(a->for_seconds)) + " s" : "")
                << "; from " << r.Where() << "\n";
      if (auto w = watched.find(r.id); w != watched.end())
        std::cout << "    watches " << (w->second == 0 ? std::string("no series in this store now (a typo, or not logged yet?)")
                                                      : std::to_string(w->second) + " series in this store now") << "\n";
    } else {
      std::string roles;
      for (const auto& x : r.roles) roles += (roles.empty() ? "" : ", ") + x;
      if (!r.roles_any.empty()) {  // roles_any: one of these as well
        std::string any;
        for (const auto& x : r.roles_any) any += (any.empty() ? "" : " or ") + x;
        roles += (roles.empty() ? "one of " : ", and one of ") + any;
      }
      for (const auto& v : r.needs_rows)  // a run fact as well (diagnose::RunFactViews)
        for (const auto& f : diagnose::RunFactViews())
          if (f.name == v) roles += (roles.empty() ? "" : ", and ") + f.what;
      std::cout << "    needs: " << (roles.empty() ? "-" : roles) << (r.scope_all ? "; runs over every run" : "")
                << "; from " << r.origin << "\n";
    }
    for (const auto& p : r.params) {
      double v = p.default_value;
      auto o = options.params.find(r.id);
      const bool set = o != options.params.end() && o->second.count(p.name);
      if (set) v = o->second.at(p.name);
      char num[32];
      std::snprintf(num, sizeof num, "%g", v);
      std::cout << "    " << p.name << " = " << num << (set ? " (config)" : "") << ": " << p.description << "\n";
    }
    if (f.Has("verbose")) std::cout << "    cause: " << r.cause << "\n    fix:   " << r.fix << "\n";
  }
  // Not a SQL rule: the engine's verdict per run, listed because config can disable it.
  const diagnose::Rule& v = diagnose::RunVerdictRule();
  std::cout << v.id << "  [" << diagnose::SeverityName(v.severity) << "]"
            << (options.disabled.count(v.id) ? " (disabled)" : "") << "  " << v.title << "\n"
            << "    computed from the run's other findings (watch: a warning fires; kill: a critical one), "
               "with the loss forecast; healthy runs get none; from "
            << v.origin << "\n";
  if (f.Has("verbose")) std::cout << "    cause: " << v.cause << "\n    fix:   " << v.fix << "\n";
  for (const auto& e : errors) std::cout << "not loaded: " << e << "\n";
  return errors.empty() ? 0 : 1;
}

int CmdFindings(const Args& args) {
  Flags f(args, {"db", "format"}, {"all", "help"});
  if (f.Has("help")) return Usage(kFindingsHelp);
  if (!f.error().empty()) return Usage(kFindingsHelp, f.error());
  if (!f.Has("db")) return Usage(kFindingsHelp, "findings needs --db FILE");
  Format format = Format::kTable;
  if (auto fm = f.Get("format"); fm && !ParseFormat(*fm, &format))
    return Usage(kFindingsHelp, "--format must be table, csv or json");
  Result<std::unique_ptr<store::Db>> db = store::OpenReadOnly(*f.Get("db"));
  if (!db.ok()) {
    std::cerr << "trainwatch: " << db.status().message() << "\n";
    return 1;
  }
  Result<store::Stmt> q = (*db)->Prepare(
      std::string("SELECT state, severity, rule, run, series, onset_step, "
                  "datetime(first_seen, 'unixepoch') AS first_seen, "
                  "datetime(COALESCE(resolved_at, last_seen), 'unixepoch') AS last_change, message "
                  "FROM finding_list ") +
      (f.Has("all") ? "" : "WHERE state != 'resolved' OR resolved_at > unixepoch() - 86400 ") +
      "ORDER BY state = 'resolved', CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END, "
      "run, rule");
  if (!q.ok()) {
    std::cerr << "trainwatch: " << q.status().message() << "\n";
    return 1;
  }
  Result<int64_t> n = PrintRows(*q, format, std::cout);
  if (!n.ok()) {
    std::cerr << "trainwatch: " << n.status().message() << "\n";
    return 1;
  }
  if (format == Format::kTable && *n == 0) std::cout << "no findings\n";
  return 0;
}

int CmdRoles(const Args& args) {
  Flags f(args, {"db", "run", "config", "format"}, {"help"});
  if (f.Has("help")) return Usage(kRolesHelp);
  if (!f.error().empty()) return Usage(kRolesHelp, f.error());
  if (!f.Has("db")) return Usage(kRolesHelp, "roles needs --db FILE");
  Format format = Format::kTable;
  if (auto fm = f.Get("format"); fm && !ParseFormat(*fm, &format))
    return Usage(kRolesHelp, "--format must be table, csv or json");
  diagnose::EngineOptions options;
  std::string error;
  if (!EngineOptionsFrom(f, &options, &error)) return Usage(kRolesHelp, error);
  if (!RuleConfigOk(options)) return 1;
  Result<std::unique_ptr<diagnose::Engine>> engine = diagnose::Engine::Open(*f.Get("db"), options);
  if (!engine.ok()) {
    std::cerr << "trainwatch: " << engine.status().message() << "\n";
    return 1;
  }
  Result<std::vector<int64_t>> runs = RunsMatching((*engine)->db(), f.Get("run"));
  Result<diagnose::RoleMap> map = runs.ok() ? (*engine)->Roles(&*runs) : Result<diagnose::RoleMap>(runs.status());
  if (!map.ok()) {
    std::cerr << "trainwatch: " << map.status().message() << "\n";
    return 1;
  }
  Status st = diagnose::WriteRoleTable((*engine)->db(), *map);
  Result<store::Stmt> q = (*engine)->db().Prepare(
      "SELECT r.name AS run, rr.role, rr.tag, CASE WHEN rr.source_run_id != rr.run_id "
      "THEN (SELECT name FROM runs WHERE run_id = rr.source_run_id) ELSE '' END AS from_run, "
      "printf('%.2f', rr.confidence) AS confidence, "
      "CASE rr.direction WHEN 1 THEN 'higher' WHEN -1 THEN 'lower' ELSE '' END AS better, rr.why "
      "FROM temp.run_roles rr JOIN runs r ON r.run_id = rr.run_id ORDER BY r.name, rr.role, rr.tag");
  if (!st.ok() || !q.ok()) {
    std::cerr << "trainwatch: " << (st.ok() ? q.status() : st).message() << "\n";
    return 1;
  }
  Result<int64_t> n = PrintRows(*q, format, std::cout);
  return n.ok() ? 0 : 1;
}

}  // namespace tw::cli

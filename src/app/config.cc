#include "app/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <toml++/toml.h>

#include "base/toml_guard.h"
#include "base/file_io.h"
#include "base/strings.h"
#include "diagnose/role_inference.h"
#include "fleet/fleet.h"
#include "web/access.h"
#include "notify/channel_types.h"
#include "notify/email_channel.h"

namespace tw::app {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxConfigBytes = 4 << 20;  // a config is a few KiB; more is no config

std::string Where(const std::string& file, const toml::source_region& src) {
  return file + ":" + std::to_string(src.begin.line) + ": ";
}

std::string NumberText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Reads one table's keys, refusing any key it does not know: a typo must not be silently
// ignored (a misspelt `rescan_intervall` would otherwise leave the default in force).
class Section {
 public:
  Section(const std::string& file, const std::string& name, const toml::table& t)
      : file_(file), name_(name), t_(t) {}

  Status CheckKeys(const std::set<std::string>& known) const {
    for (const auto& [k, v] : t_) {
      if (!known.count(std::string(k.str()))) {
        std::string list;
        for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
        return InvalidArgument(Where(file_, k.source()) + "unknown key '" + std::string(k.str()) +
                               "' in [" + name_ + "] (expected one of: " + list + ")");
      }
    }
    return Status::Ok();
  }
  template <typename T>
  Status Get(const char* key, const char* expected, T* out) const {
    const toml::node* n = t_.get(key);
    if (!n) return Status::Ok();
    // toml++'s value<T>() converts (an integer to a bool, say): insist on the TOML type.
    const bool exact = std::is_same_v<T, bool>      ? n->is_boolean()
                       : std::is_same_v<T, int64_t> ? n->is_integer()
                       : std::is_same_v<T, double>  ? n->is_number()
                                                    : n->is_string();
    // Checked before value<T>(): toml++ 3.3.0 converts a float to an integer with a plain cast,
    // undefined behaviour for 4.7e19 (found by fuzz_config).
    std::optional<T> v;
    if (exact) v = n->value<T>();
    if (!v)
      return InvalidArgument(Where(file_, n->source()) + "[" + name_ + "] " + key + " must be " +
                             expected + ", got " + TypeName(*n));
    if constexpr (std::is_same_v<T, double>)
      if (!std::isfinite(*v))  // TOML has nan and inf: a threshold or interval no number compares with
        return InvalidArgument(Where(file_, n->source()) + "[" + name_ + "] " + key + " must be a finite number, got " +
                               NumberText(*v));
    *out = *v;
    return Status::Ok();
  }
  Status GetStrings(const char* key, std::vector<std::string>* out) const {
    const toml::node* n = t_.get(key);
    if (!n) return Status::Ok();
    const toml::array* a = n->as_array();
    if (!a)
      return InvalidArgument(Where(file_, n->source()) + "[" + name_ + "] " + key +
                             " must be an array of strings, got " + TypeName(*n));
    out->clear();
    for (const auto& e : *a) {
      auto s = e.value<std::string>();
      if (!s || !e.is_string())
        return InvalidArgument(Where(file_, e.source()) + "[" + name_ + "] " + key +
                               " must hold strings, got " + TypeName(e));
      out->push_back(*s);
    }
    return Status::Ok();
  }
  const toml::node* node(const char* key) const { return t_.get(key); }

 private:
  static std::string TypeName(const toml::node& n) {
    switch (n.type()) {
      case toml::node_type::string: return "a string";
      case toml::node_type::integer: return "an integer";
      case toml::node_type::floating_point: return "a number";
      case toml::node_type::boolean: return "a boolean";
      case toml::node_type::array: return "an array";
      case toml::node_type::table: return "a table";
      default: return "a date/time";
    }
  }
  const std::string& file_;
  std::string name_;
  const toml::table& t_;
};

std::string Resolve(const fs::path& base, const std::string& p) {
  if (objstore::IsS3Url(p)) return p;  // an object-store root: no file system path
  fs::path path(p);
  return (path.is_absolute() ? path : base / path).lexically_normal().native();
}

// [rules]: enabled, interval_seconds, dir, disabled, and one sub-table per rule id holding
// its parameters ([rules.loss_spikes] z = 10). [roles]: role = ["tag glob", ...], tried before
// the built-in patterns. Rule ids and parameter names are checked when the rules load
// (diagnose::Engine reports "config: ..." errors, and the daemon refuses to start on them).
Status LoadRulesSection(const std::string& path, const fs::path& base, const toml::table& root,
                        Config* c) {
  if (const toml::node* n = root.get("rules")) {
    if (!n->is_table()) return InvalidArgument(Where(path, n->source()) + "'rules' must be a table");
    const toml::table& t = *n->as_table();
    Section r(path, "rules", t);
    std::set<std::string> known = {"enabled", "interval_seconds", "dir", "disabled", "time_limit_seconds",
                                   "memory_limit_mb", "alert_unmatched_hours"};
    for (const auto& [k, v] : t)
      if (v.is_table()) known.insert(std::string(k.str()));
    TW_RETURN_IF_ERROR(r.CheckKeys(known));
    TW_RETURN_IF_ERROR(r.Get("enabled", "true or false", &c->rules_enabled));
    double secs = c->rules_interval_ms / 1000.0;
    TW_RETURN_IF_ERROR(r.Get("interval_seconds", "a number of seconds", &secs));
    if (secs < 0.1 || secs > 86400)
      return InvalidArgument(Where(path, r.node("interval_seconds")->source()) +
                             "[rules] interval_seconds must be between 0.1 and 86400");
    c->rules_interval_ms = static_cast<int64_t>(secs * 1000);
    // What one rule may spend (diagnose/rule_limits.h): a user rule must not hang or bloat the
    // daemon, a built-in one on a long run must not be cut short.
    TW_RETURN_IF_ERROR(r.Get("time_limit_seconds", "a number of seconds", &c->rules.limits.seconds));
    if (c->rules.limits.seconds < 0.1 || c->rules.limits.seconds > 3600)
      return InvalidArgument(Where(path, r.node("time_limit_seconds")->source()) +
                             "[rules] time_limit_seconds must be between 0.1 and 3600");
    int64_t mb = c->rules.limits.memory_bytes >> 20;
    TW_RETURN_IF_ERROR(r.Get("memory_limit_mb", "an integer (MiB)", &mb));
    if (mb < 16 || mb > 65536)
      return InvalidArgument(Where(path, r.node("memory_limit_mb")->source()) +
                             "[rules] memory_limit_mb must be between 16 and 65536");
    c->rules.limits.memory_bytes = mb << 20;
    // How long an [[alert]] may watch nothing before it is reported (its tag may not be logged yet).
    double hours = c->alert_unmatched_seconds / 3600;
    TW_RETURN_IF_ERROR(r.Get("alert_unmatched_hours", "a number of hours", &hours));
    if (hours < 0.0005 || hours > 720)
      return InvalidArgument(Where(path, r.node("alert_unmatched_hours")->source()) +
                             "[rules] alert_unmatched_hours must be between 0.0005 and 720");
    c->alert_unmatched_seconds = hours * 3600;
    std::string dir;
    TW_RETURN_IF_ERROR(r.Get("dir", "a string (a directory of .sql rules)", &dir));
    if (!dir.empty()) c->rules.rules_dir = Resolve(base, dir);
    std::vector<std::string> disabled;
    TW_RETURN_IF_ERROR(r.GetStrings("disabled", &disabled));
    c->rules.disabled = {disabled.begin(), disabled.end()};
    for (const auto& [k, v] : t) {
      if (!v.is_table()) continue;
      const std::string id(k.str());
      for (const auto& [pk, pv] : *v.as_table()) {
        auto num = pv.value<double>();
        if (!pv.is_number() || !num)
          return InvalidArgument(Where(path, pv.source()) + "[rules." + id + "] " +
                                 std::string(pk.str()) + " must be a number");
        if (!std::isfinite(*num))  // compares false with every value: the rule would never (or always) fire
          return InvalidArgument(Where(path, pv.source()) + "[rules." + id + "] " + std::string(pk.str()) +
                                 " must be a finite number, got " + NumberText(*num));
        c->rules.params[id][std::string(pk.str())] = *num;
      }
    }
  }
  if (const toml::node* n = root.get("roles")) {
    if (!n->is_table()) return InvalidArgument(Where(path, n->source()) + "'roles' must be a table");
    const toml::table& t = *n->as_table();
    Section r(path, "roles", t);
    const std::vector<std::string> roles = diagnose::KnownRoles();
    TW_RETURN_IF_ERROR(r.CheckKeys({roles.begin(), roles.end()}));
    for (const auto& [k, v] : t) {
      std::vector<std::string> globs;
      TW_RETURN_IF_ERROR(r.GetStrings(std::string(k.str()).c_str(), &globs));
      for (const auto& g : globs)
        c->rules.roles.push_back({std::string(k.str()), g, "", "config " + path});
    }
  }
  return Status::Ok();
}

// [lifecycle]: run events (diagnose/lifecycle.h): whether they are judged, how long a run
// that reached its plan must be quiet to have finished, the plan's fraction that counts as
// reached, how recent an event must be to be announced, and whether writers' pids are judged.
Status LoadLifecycleSection(const std::string& path, const toml::table& root, Config* c) {
  const toml::node* n = root.get("lifecycle");
  if (!n) return Status::Ok();
  if (!n->is_table()) return InvalidArgument(Where(path, n->source()) + "'lifecycle' must be a table");
  Section l(path, "lifecycle", *n->as_table());
  TW_RETURN_IF_ERROR(l.CheckKeys({"enabled", "quiet_seconds", "planned_frac", "announce_within_hours", "writer_pids",
                                  "check_seconds"}));
  diagnose::LifecycleOptions& o = c->lifecycle;
  TW_RETURN_IF_ERROR(l.Get("enabled", "true or false", &o.enabled));
  TW_RETURN_IF_ERROR(l.Get("writer_pids", "true or false", &o.writer_pids));
  TW_RETURN_IF_ERROR(l.Get("quiet_seconds", "a number of seconds", &o.quiet_seconds));
  if (o.quiet_seconds < 10 || o.quiet_seconds > 7 * 86400)
    return InvalidArgument(Where(path, l.node("quiet_seconds")->source()) +
                           "[lifecycle] quiet_seconds must be between 10 and 604800 (7 days)");
  TW_RETURN_IF_ERROR(l.Get("check_seconds", "a number of seconds", &o.check_seconds));
  if (o.check_seconds < 1 || o.check_seconds > 3600)
    return InvalidArgument(Where(path, l.node("check_seconds")->source()) +
                           "[lifecycle] check_seconds must be between 1 and 3600");
  TW_RETURN_IF_ERROR(l.Get("planned_frac", "a number (a fraction)", &o.planned_frac));
  if (o.planned_frac <= 0 || o.planned_frac > 1)
    return InvalidArgument(Where(path, l.node("planned_frac")->source()) +
                           "[lifecycle] planned_frac must be in (0, 1]");
  double hours = o.announce_within_seconds / 3600;
  TW_RETURN_IF_ERROR(l.Get("announce_within_hours", "a number of hours", &hours));
  if (hours < 0 || hours > 24 * 30)
    return InvalidArgument(Where(path, l.node("announce_within_hours")->source()) +
                           "[lifecycle] announce_within_hours must be between 0 and 720");
  o.announce_within_seconds = hours * 3600;
  return Status::Ok();
}

// [s3]: how s3:// roots are reached (docs/sources.md "Object-store logdirs").
Status LoadS3Section(const std::string& path, const toml::table& root, Config* c) {
  const toml::node* n = root.get("s3");
  if (!n) return Status::Ok();
  if (!n->is_table()) return InvalidArgument(Where(path, n->source()) + "'s3' must be a table");
  Section t(path, "s3", *n->as_table());
  TW_RETURN_IF_ERROR(t.CheckKeys({"endpoint", "region", "path_style", "poll_interval_seconds", "profile",
                                  "credentials_file", "instance_metadata", "timeout_seconds", "max_attempts",
                                  "read_ahead_bytes"}));
  objstore::S3Settings& s = c->s3;
  TW_RETURN_IF_ERROR(t.Get("endpoint", "a string (a URL: https://s3.eu-west-1.amazonaws.com)", &s.endpoint));
  if (!s.endpoint.empty() && !s.endpoint.starts_with("http://") && !s.endpoint.starts_with("https://"))
    return InvalidArgument(Where(path, t.node("endpoint")->source()) +
                           "[s3] endpoint must start with http:// or https://");
  TW_RETURN_IF_ERROR(t.Get("region", "a string (us-east-1)", &s.region));
  if (s.region.empty() || s.region.find_first_of("/ \n") != std::string::npos)
    return InvalidArgument(Where(path, t.node("region")->source()) + "[s3] region must be a region name");
  TW_RETURN_IF_ERROR(t.Get("path_style", "true or false", &s.path_style));
  TW_RETURN_IF_ERROR(t.Get("profile", "a string (a profile of the credentials file)", &s.credentials.profile));
  TW_RETURN_IF_ERROR(t.Get("credentials_file", "a string (a file path)", &s.credentials.credentials_file));
  TW_RETURN_IF_ERROR(t.Get("instance_metadata", "a string (a URL, or \"\" for none)", &s.credentials.imds_endpoint));
  double poll = c->s3_poll_ms / 1000.0;
  TW_RETURN_IF_ERROR(t.Get("poll_interval_seconds", "a number of seconds", &poll));
  if (poll < 0.05 || poll > 86400)
    return InvalidArgument(Where(path, t.node("poll_interval_seconds")->source()) +
                           "[s3] poll_interval_seconds must be between 0.05 and 86400");
  c->s3_poll_ms = static_cast<int64_t>(poll * 1000);
  TW_RETURN_IF_ERROR(t.Get("timeout_seconds", "a number of seconds", &s.timeout_seconds));
  if (s.timeout_seconds < 0.1 || s.timeout_seconds > 3600)
    return InvalidArgument(Where(path, t.node("timeout_seconds")->source()) +
                           "[s3] timeout_seconds must be between 0.1 and 3600");
  int64_t attempts = s.max_attempts;
  TW_RETURN_IF_ERROR(t.Get("max_attempts", "a positive integer", &attempts));
  if (attempts < 1 || attempts > 20)
    return InvalidArgument(Where(path, t.node("max_attempts")->source()) + "[s3] max_attempts must be between 1 and 20");
  s.max_attempts = static_cast<int>(attempts);
  int64_t ahead = static_cast<int64_t>(s.read_ahead_bytes);
  TW_RETURN_IF_ERROR(t.Get("read_ahead_bytes", "a positive integer", &ahead));
  if (ahead < 4096 || ahead > (int64_t{256} << 20))
    return InvalidArgument(Where(path, t.node("read_ahead_bytes")->source()) +
                           "[s3] read_ahead_bytes must be between 4096 and 268435456");
  s.read_ahead_bytes = static_cast<size_t>(ahead);
  return Status::Ok();
}

// [[console]]: one table per glob of console logs, `glob = "/scratch/*/slurm-*.out"`. The glob
// must be absolute: it is matched against absolute paths, and a relative one would depend on
// where the daemon was started (or on the config file's directory, which no one would guess).
Status LoadConsoleSection(const std::string& path, const toml::table& root, Config* c) {
  const toml::node* n = root.get("console");
  if (!n) return Status::Ok();
  const toml::array* a = n->as_array();
  if (!a || !a->is_array_of_tables())
    return InvalidArgument(Where(path, n->source()) +
                           "'console' must be an array of tables: [[console]] with glob = \"/path/*.log\"");
  for (const auto& e : *a) {
    Section cs(path, "[console]", *e.as_table());  // messages say [[console]]
    TW_RETURN_IF_ERROR(cs.CheckKeys({"glob"}));
    std::string glob;
    TW_RETURN_IF_ERROR(cs.Get("glob", "a string (an absolute path glob)", &glob));
    const toml::source_region& at = cs.node("glob") ? cs.node("glob")->source() : e.source();
    if (glob.empty())
      return InvalidArgument(Where(path, at) + "[[console]] needs a glob: an absolute path pattern such as "
                             "\"/scratch/*/slurm-*.out\"");
    if (glob.find('\0') != std::string::npos)
      return InvalidArgument(Where(path, at) + "[[console]] glob must not hold a NUL character");
    if (glob.front() != '/')
      return InvalidArgument(Where(path, at) + "[[console]] glob '" + glob +
                             "' must be an absolute path (it is matched against absolute paths)");
    // "//", "/./" and ".." taken out, as a root's are; then the root it lies under.
    const std::string given = glob;
    glob = fs::path(glob).lexically_normal().native();
    if (glob.back() == '/')
      return InvalidArgument(Where(path, at) + "[[console]] glob '" + given +
                             "' names a directory: it must name files");
    c->console.push_back({glob, SplitGlobRoot(glob).first, static_cast<int>(at.begin.line)});
  }
  return Status::Ok();
}

// [[alert]]: one table per alert (docs/alerts.md): name, run, tag or role, exactly one
// condition (above, below, new_best, change_pct with window, absent_for), for, severity,
// message. Each becomes a rule (diagnose/alert.h). Everything that can be judged without a
// store is judged here, at the key's line; a tag that matches nothing is not an error (it may
// not exist yet): the daemon reports an alert that matched nothing for a day.
Status LoadAlertSection(const std::string& path, const toml::table& root, Config* c) {
  const toml::node* n = root.get("alert");
  if (!n) return Status::Ok();
  const toml::array* arr = n->as_array();
  if (!arr || !arr->is_array_of_tables())
    return InvalidArgument(Where(path, n->source()) +
                           "'alert' must be an array of tables: [[alert]] with name, tag or role, and a condition");
  static const char* const kConditions[] = {"above", "below", "new_best", "change_pct", "absent_for"};
  std::set<std::string> names;
  for (const auto& e : *arr) {
    const toml::table& t = *e.as_table();
    Section as(path, "[alert]", t);  // messages say [[alert]]
    TW_RETURN_IF_ERROR(as.CheckKeys({"name", "run", "tag", "role", "above", "below", "new_best", "change_pct",
                                     "window", "absent_for", "for", "severity", "message"}));
    diagnose::Alert a;
    a.file = path;
    a.line = static_cast<int>(e.source().begin.line);
    const std::string table = Where(path, e.source()) + "[[alert]]";
    auto at = [&](const char* key) { return Where(path, as.node(key)->source()) + "[[alert]] "; };
    TW_RETURN_IF_ERROR(as.Get("name", "a string ([A-Za-z0-9_]+)", &a.name));
    if (a.name.empty()) return InvalidArgument(table + " needs a name (letters, digits and _): its rule id");
    if (a.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
        std::string::npos)
      return InvalidArgument(at("name") + "name '" + a.name + "' must be letters, digits and _ (it is a rule id)");
    if (!names.insert(a.name).second)
      return InvalidArgument(at("name") + "two alerts are named '" + a.name + "'");
    const std::string who = "'" + a.name + "': ";
    TW_RETURN_IF_ERROR(as.Get("run", "a string (a glob over run names)", &a.run_glob));
    if (a.run_glob.empty()) return InvalidArgument(at("run") + who + "run must be a glob over run names (\"*\": all)");
    TW_RETURN_IF_ERROR(as.Get("tag", "a string (a glob over tags)", &a.tag));
    TW_RETURN_IF_ERROR(as.Get("role", "a string (a role: trainwatch roles lists them)", &a.role));
    if (as.node("tag") && as.node("role"))
      return InvalidArgument(at("role") + who + "give a tag or a role, not both");
    if (as.node("tag") && a.tag.empty()) return InvalidArgument(at("tag") + who + "tag must not be empty");
    if (!as.node("tag") && !as.node("role"))
      return InvalidArgument(table + " " + who + "needs a tag (a glob over tags) or a role (val_loss, ...)");
    if (as.node("role")) {
      const std::vector<std::string> roles = diagnose::KnownRoles();
      if (std::find(roles.begin(), roles.end(), a.role) == roles.end() || a.role == "ignore") {
        std::string list;
        for (const auto& r : roles)
          if (r != "ignore") list += (list.empty() ? "" : ", ") + r;
        return InvalidArgument(at("role") + who + "no role is called '" + a.role + "' (known: " + list + ")");
      }
    }
    // Exactly one condition.
    std::vector<const char*> given;
    for (const char* k : kConditions)
      if (as.node(k)) given.push_back(k);
    if (given.empty())
      return InvalidArgument(table + " " + who +
                             "needs one condition: above, below, new_best, change_pct (with window) or absent_for");
    if (given.size() > 1)
      return InvalidArgument(at(given[1]) + who + "has two conditions, " + given[0] + " and " + given[1] +
                             ": an alert has exactly one (write two alerts" +
                             (std::string(given[0]) == "above" && std::string(given[1]) == "below"
                                  ? " for a band: one above, one below)"
                                  : ")"));
    const std::string cond = given[0];
    // A duration: a number of seconds, or a string with a unit ("90s", "30m", "2h", "1d").
    auto duration = [&](const char* key, double* out) -> Status {
      const toml::node* d = as.node(key);
      if (!d) return Status::Ok();
      std::optional<double> v;
      if (d->is_number()) v = d->value<double>();
      else if (d->is_string()) {
        double secs = 0;
        if (ParseDuration(*d->value<std::string>(), &secs)) v = secs;
      }
      if (!v || !std::isfinite(*v) || *v < 0)
        return InvalidArgument(at(key) + who + key + " must be a duration: seconds (600) or a string with s, m, h "
                               "or d (\"10m\", \"2h\")");
      *out = *v;
      return Status::Ok();
    };
    TW_RETURN_IF_ERROR(duration("for", &a.for_seconds));
    if (as.node("window") && cond != "change_pct")
      return InvalidArgument(at("window") + who + "window goes with change_pct only");
    if (cond == "above" || cond == "below") {
      a.condition = cond == "above" ? diagnose::Alert::Condition::kAbove : diagnose::Alert::Condition::kBelow;
      TW_RETURN_IF_ERROR(as.Get(cond.c_str(), "a number", &a.value));
    } else if (cond == "new_best") {
      a.condition = diagnose::Alert::Condition::kNewBest;
      std::string best;
      TW_RETURN_IF_ERROR(as.Get("new_best", "\"min\" or \"max\"", &best));
      if (best != "min" && best != "max")
        return InvalidArgument(at("new_best") + who + "new_best must be \"min\" (lower is better) or \"max\", got '" +
                               best + "'");
      a.best = best == "max" ? 1 : -1;
      // A role says which way is better: the other way would announce each new worst.
      const int dir = a.role.empty() ? 0 : diagnose::RoleDirection(a.role);
      if (dir != 0 && dir != a.best)
        return InvalidArgument(at("new_best") + who + "new_best = \"" + best + "\" contradicts role " + a.role +
                               ", which is better " + (dir > 0 ? "higher (\"max\")" : "lower (\"min\")") +
                               ": it would fire at each new worst");
    } else if (cond == "change_pct") {
      a.condition = diagnose::Alert::Condition::kChangePct;
      TW_RETURN_IF_ERROR(as.Get("change_pct", "a number (percent; below 0 for a fall)", &a.value));
      if (a.value == 0)
        return InvalidArgument(at("change_pct") + who + "change_pct must not be 0: 20 fires on a rise of 20% "
                               "or more, -20 on a fall of 20% or more");
      if (a.value <= -100)
        return InvalidArgument(at("change_pct") + who + "change_pct " + NumberText(a.value) +
                               ": a fall of 100% or more crosses zero; use below = 0 instead");
      const toml::node* w = as.node("window");
      if (!w)
        return InvalidArgument(table + " " + who + "change_pct needs a window: steps (500) or a duration (\"30m\")");
      double secs = 0;
      if (w->is_integer() && *w->value<int64_t>() > 0) {
        a.window = static_cast<double>(*w->value<int64_t>());
      } else if (w->is_string() && ParseDuration(*w->value<std::string>(), &secs)) {
        a.window = secs;
        a.window_seconds = true;
      } else {
        return InvalidArgument(at("window") + who + "window must be a whole number of steps (500) or a duration "
                               "(\"30m\", \"2h\")");
      }
    } else {
      a.condition = diagnose::Alert::Condition::kAbsentFor;
      TW_RETURN_IF_ERROR(duration("absent_for", &a.value));
      if (a.value <= 0) return InvalidArgument(at("absent_for") + who + "absent_for must be longer than 0");
      if (as.node("for"))
        return InvalidArgument(at("for") + who + "for does not go with absent_for, which is already how long the "
                               "series must be silent (" + (a.for_seconds > a.value ? "and for is longer than it" :
                               "set absent_for to the whole time") + ")");
    }
    std::string severity = "warning";
    TW_RETURN_IF_ERROR(as.Get("severity", "\"info\", \"warning\" or \"critical\"", &severity));
    if (!diagnose::ParseSeverity(severity, &a.severity))
      return InvalidArgument(at("severity") + who + "severity must be info, warning or critical, got '" + severity + "'");
    TW_RETURN_IF_ERROR(as.Get("message", "a string", &a.message));
    c->rules.alerts.push_back(std::move(a));
  }
  return Status::Ok();
}

// A secret from exactly one of: KEY (in the file), KEY_env (an environment variable), or
// KEY_credential (a file in systemd's $CREDENTIALS_DIRECTORY, from LoadCredential=). Error
// messages name where the secret was looked for, never its value.
Status GetSecret(const std::string& path, const std::string& where, const Section& s, const std::string& key,
                 std::string* out, bool* literal) {
  std::string value, env, cred;
  TW_RETURN_IF_ERROR(s.Get(key.c_str(), "a string", &value));
  TW_RETURN_IF_ERROR(s.Get((key + "_env").c_str(), "a string (an environment variable's name)", &env));
  TW_RETURN_IF_ERROR(s.Get((key + "_credential").c_str(), "a string (a systemd credential's name)", &cred));
  const int given = !value.empty() + !env.empty() + !cred.empty();
  if (given > 1)
    return InvalidArgument(path + ": " + where + ": give only one of " + key + ", " + key + "_env, " + key +
                           "_credential");
  if (!value.empty()) {
    *out = value;
    *literal = true;
  } else if (!env.empty()) {
    const char* v = std::getenv(env.c_str());
    if (!v || !*v)
      return InvalidArgument(path + ": " + where + ": environment variable " + env + " (" + key +
                             "_env) is not set");
    *out = v;
  } else if (!cred.empty()) {
    const char* dir = std::getenv("CREDENTIALS_DIRECTORY");
    if (!dir || !*dir)
      return InvalidArgument(path + ": " + where + ": " + key + "_credential needs $CREDENTIALS_DIRECTORY "
                             "(systemd LoadCredential=)");
    std::ifstream in(fs::path(dir) / cred);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (!in.good() && text.empty())
      return InvalidArgument(path + ": " + where + ": cannot read credential '" + cred + "' in " + dir);
    *out = text;
  }
  return Status::Ok();
}

// A mail channel's addressing (from, to) and an email channel's SMTP keys (its password is
// one of its table's keys); MakeChannel judges the whole afterwards.
Status LoadEmailKeys(const std::string& path, const Section& cs, notify::ChannelConfig* ch) {
  TW_RETURN_IF_ERROR(cs.Get("from", "a string (an email address)", &ch->from));
  TW_RETURN_IF_ERROR(cs.GetStrings("to", &ch->to));
  if (ch->type != "email") return Status::Ok();  // sendgrid: an API, no SMTP
  TW_RETURN_IF_ERROR(cs.Get("smtp_host", "a string (a host name or address)", &ch->smtp_host));
  TW_RETURN_IF_ERROR(cs.Get("tls", "a string (starttls, tls or none)", &ch->tls));
  if (notify::DefaultSmtpPort(ch->tls) == 0)
    return InvalidArgument(Where(path, cs.node("tls")->source()) + "channel '" + ch->name + "'" +
                           ": tls must be starttls, tls or none");
  int64_t port = notify::DefaultSmtpPort(ch->tls);
  TW_RETURN_IF_ERROR(cs.Get("smtp_port", "an integer (a TCP port)", &port));
  if (port < 1 || port > 65535)
    return InvalidArgument(Where(path, cs.node("smtp_port")->source()) + "channel '" + ch->name + "'" +
                           ": smtp_port must be in 1..65535");
  ch->smtp_port = static_cast<int>(port);
  return cs.Get("username", "a string", &ch->username);
}

// A type's own keys (channel_types.h), each into its field: strings, ids, secrets and
// endpoints from KEY, KEY_env or KEY_credential. `literal_secret` is set by a secret written in
// the file.
Status LoadTypedKeys(const std::string& path, const std::string& label, const std::string& at, const Section& cs,
                     const notify::ChannelType& type, notify::ChannelConfig* ch, bool* literal_secret) {
  using Kind = notify::ChannelKey::Kind;
  for (const notify::ChannelKey& k : type.keys) {
    const std::string key(k.name);
    std::string* out = k.field ? &(ch->*k.field) : nullptr;
    bool endpoint_literal = false;  // an API's URL in the file is no secret
    switch (k.kind) {
      case Kind::kText:
        TW_RETURN_IF_ERROR(cs.Get(key.c_str(), std::string(k.expected).c_str(), out));
        break;
      case Kind::kId:
        if (const toml::node* n = cs.node(key.c_str()); n && n->is_integer()) {
          *out = std::to_string(*n->value<int64_t>());
          break;
        }
        TW_RETURN_IF_ERROR(cs.Get(key.c_str(), std::string(k.expected).c_str(), out));
        break;
      case Kind::kSecret:
        TW_RETURN_IF_ERROR(GetSecret(path, label, cs, key, out, literal_secret));
        break;
      case Kind::kEndpoint:
        TW_RETURN_IF_ERROR(GetSecret(path, label, cs, key, out, &endpoint_literal));
        break;
      case Kind::kOwn:
      case Kind::kOwnSecret:
        break;
    }
  }
  if (type.mail) TW_RETURN_IF_ERROR(LoadEmailKeys(path, cs, ch));
  for (const notify::ChannelKey& k : type.keys) {
    if (!k.required || !(ch->*k.field).empty()) continue;
    const std::vector<std::string> forms = notify::KeyForms(k);
    std::string names = forms[0];
    for (size_t i = 1; i < forms.size(); ++i) names += (i + 1 == forms.size() ? " or " : ", ") + forms[i];
    return InvalidArgument(at + "channel '" + ch->name + "' needs " + names);
  }
  return Status::Ok();
}

// A channel's grouping: group_by, group_wait_seconds, group_interval_seconds,
// repeat_interval_seconds, digest_minutes (docs/notifications.md). A key that would have no
// effect (group_wait_seconds without grouping, group_by beside a digest) is refused, as is a
// wait a message could not outlive (max_age_hours).
Status LoadGroupingKeys(const std::string& path, const Section& cs, double max_age_seconds,
                        notify::ChannelConfig* ch) {
  const std::string who = "channel '" + ch->name + "': ";
  const auto at = [&](const char* key) { return Where(path, cs.node(key)->source()) + who; };
  if (const toml::node* n = cs.node("group_by")) {
    TW_RETURN_IF_ERROR(cs.GetStrings("group_by", &ch->group_by));
    std::set<std::string> seen;
    for (const toml::node& e : *n->as_array()) {
      const std::string field = *e.value<std::string>();
      if (!notify::IsGroupField(field))
        return InvalidArgument(Where(path, e.source()) + who + "group_by: '" + field +
                               "' is not a field to group by (run, rule; [] for no grouping)");
      if (!seen.insert(field).second)
        return InvalidArgument(Where(path, e.source()) + who + "group_by names '" + field + "' twice");
    }
  }
  const auto seconds = [&](const char* key, double lo, double hi, const char* range, double* out) -> Status {
    TW_RETURN_IF_ERROR(cs.Get(key, "a number of seconds", out));
    if (cs.node(key) && (*out < lo || *out > hi))
      return InvalidArgument(at(key) + key + " must be " + range);
    return Status::Ok();
  };
  TW_RETURN_IF_ERROR(seconds("group_wait_seconds", 0, 3600, "between 0 and 3600", &ch->group_wait_seconds));
  TW_RETURN_IF_ERROR(seconds("group_interval_seconds", 0, 86400, "between 0 and 86400", &ch->group_interval_seconds));
  TW_RETURN_IF_ERROR(seconds("repeat_interval_seconds", 0, 30 * 86400, "0 (never) or between 60 and 2592000 (30 days)",
                             &ch->repeat_interval_seconds));
  if (ch->repeat_interval_seconds > 0 && ch->repeat_interval_seconds < 60)
    return InvalidArgument(at("repeat_interval_seconds") +
                           "repeat_interval_seconds must be 0 (never) or between 60 and 2592000 (30 days)");
  TW_RETURN_IF_ERROR(cs.Get("digest_minutes", "a number of minutes", &ch->digest_minutes));
  if (cs.node("digest_minutes") && (ch->digest_minutes < 0 || ch->digest_minutes > 1440))
    return InvalidArgument(at("digest_minutes") + "digest_minutes must be between 0 (no digest) and 1440");
  // Settings that would do nothing are mistakes, like typos.
  for (const char* key : {"group_by", "group_wait_seconds", "group_interval_seconds"})
    if (ch->digest_minutes > 0 && cs.node(key))
      return InvalidArgument(at(key) + key + " has no effect with digest_minutes (a digest holds every message "
                             "of the channel)");
  for (const char* key : {"group_wait_seconds", "group_interval_seconds"})
    if (ch->digest_minutes == 0 && ch->group_by.empty() && cs.node(key))
      return InvalidArgument(at(key) + key + " has no effect without grouping (group_by is empty" +
                             (cs.node("group_by") ? "" : " by default for a " + ch->type + " channel") +
                             "; set group_by = [\"run\"] to group)");
  // A message waits for its group at most this long before its first attempt; max_age counts
  // from its queueing, so it must leave time to deliver.
  const double longest = ch->digest_minutes > 0 ? ch->digest_minutes * 60
                         : ch->group_by.empty() ? 0
                                                : std::max(ch->group_wait_seconds, ch->group_interval_seconds);
  if (longest >= max_age_seconds) {
    const char* key = ch->digest_minutes > 0 ? "digest_minutes"
                      : cs.node("group_interval_seconds") ? "group_interval_seconds"
                      : cs.node("group_wait_seconds") ? "group_wait_seconds" : nullptr;
    return InvalidArgument((key ? at(key) : Where(path, cs.node("name")->source()) + who) +
                           "messages would wait for their group longer than [notify] max_age_hours allows "
                           "them to live; lower the wait or raise max_age_hours");
  }
  return Status::Ok();
}

// [web]: listen ("127.0.0.1:8421"; absent: no web view) and the token (token, token_env or
// token_credential), which any address beyond loopback requires (docs/web.md).
Status LoadWebSection(const std::string& path, const toml::table& t, Config* c) {
  Section w(path, "web", t);
  TW_RETURN_IF_ERROR(w.CheckKeys({"listen", "token", "token_env", "token_credential", "base_url"}));
  TW_RETURN_IF_ERROR(w.Get("base_url", "a string (the view's URL as people reach it)", &c->web_base_url));
  if (const toml::node* n = w.node("base_url")) {
    while (!c->web_base_url.empty() && c->web_base_url.back() == '/') c->web_base_url.pop_back();
    Result<notify::Url> u = notify::ParseUrl(c->web_base_url);
    if (!u.ok() || c->web_base_url.find_first_of("?#{} \"'<>") != std::string::npos)
      return InvalidArgument(Where(path, n->source()) + "[web] base_url must be an http(s) URL without a query, "
                             "like https://trainwatch.example.org or http://gpu-3:8421");
  }
  TW_RETURN_IF_ERROR(w.Get("listen", "a string (ADDRESS:PORT, like 127.0.0.1:8421)", &c->web_listen));
  bool literal = false;
  TW_RETURN_IF_ERROR(GetSecret(path, "[web]", w, "token", &c->web_token, &literal));
  if (const toml::node* n = w.node("listen")) {
    std::string address;
    uint16_t port = 0;
    if (!web::ParseListen(c->web_listen, &address, &port))
      return InvalidArgument(Where(path, n->source()) + "[web] listen must be ADDRESS:PORT (127.0.0.1:8421, [::1]:8421)");
    if (Status st = web::CheckListen(address, c->web_token); !st.ok())
      return InvalidArgument(Where(path, n->source()) + "[web] " + st.message());
  }
  // A token written in the file is only as safe as the file.
  struct stat st {};
  if (literal && ::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    return InvalidArgument(path + ": holds the [web] token but is readable by group or others; chmod 600 it, "
                           "or use token_env / token_credential");
  return Status::Ok();
}

// [fleet] (docs/fleet.md): postgres (a libpq URI or key=value string; sslmode and the rest
// pass through to libpq), the password beside it (password, password_env, password_credential
// or password_file: never in a message), host (this host's name in the fleet), interval_seconds
// and batch_rows.
Status LoadFleetSection(const std::string& path, const fs::path& base, const toml::table& t, Config* c) {
  Section f(path, "fleet", t);
  TW_RETURN_IF_ERROR(f.CheckKeys({"postgres", "password", "password_env", "password_credential", "password_file",
                                  "host", "interval_seconds", "batch_rows", "shared_roots", "lease_seconds"}));
  fleet::FleetOptions& o = c->fleet;
  TW_RETURN_IF_ERROR(f.Get("postgres", "a string (postgresql://USER@HOST:PORT/DB?sslmode=...)", &o.conninfo));
  bool literal = false;
  TW_RETURN_IF_ERROR(GetSecret(path, "[fleet]", f, "password", &o.password, &literal));
  std::string password_file;
  TW_RETURN_IF_ERROR(f.Get("password_file", "a string (a file holding the password, mode 600)", &password_file));
  if (!password_file.empty()) {
    const std::string at = Where(path, f.node("password_file")->source()) + "[fleet] password_file ";
    if (!o.password.empty())
      return InvalidArgument(at + "and password/password_env/password_credential: give only one");
    const std::string file = Resolve(base, password_file);
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0)
      return InvalidArgument(at + file + ": " + std::strerror(errno));
    if ((st.st_mode & 077) != 0)
      return InvalidArgument(at + file + " is readable by group or others; chmod 600 it");
    std::ifstream in(file);
    if (!in || !std::getline(in, o.password) || o.password.empty())
      return InvalidArgument(at + file + ": cannot read a password from its first line");
    while (!o.password.empty() && (o.password.back() == '\r' || o.password.back() == ' ')) o.password.pop_back();
  }
  if (const toml::node* n = f.node("postgres")) {
    if (Status st = fleet::CheckConninfo(o.conninfo); !st.ok())
      return InvalidArgument(Where(path, n->source()) + "[fleet] postgres: " + st.message());
    literal = literal || fleet::ConninfoHasPassword(o.conninfo);
  } else if (!o.password.empty() || !password_file.empty()) {
    return InvalidArgument(path + ": [fleet] has a password but no postgres connection string");
  }
  TW_RETURN_IF_ERROR(f.Get("host", "a string (this host's name in the fleet)", &o.host));
  if (const toml::node* n = f.node("host"))
    if (o.host.empty() || o.host.size() > 255 || o.host.find_first_of("\n\t\r") != std::string::npos)
      return InvalidArgument(Where(path, n->source()) + "[fleet] host must be a name of 1 to 255 characters on one line");
  double interval = o.interval_ms / 1000.0;
  TW_RETURN_IF_ERROR(f.Get("interval_seconds", "a number of seconds", &interval));
  if (interval < 0.05 || interval > 3600)
    return InvalidArgument(Where(path, f.node("interval_seconds")->source()) +
                           "[fleet] interval_seconds must be between 0.05 and 3600");
  o.interval_ms = static_cast<int64_t>(interval * 1000);
  TW_RETURN_IF_ERROR(f.Get("batch_rows", "a positive integer", &o.batch_rows));
  if (o.batch_rows < 1 || o.batch_rows > 10000000)
    return InvalidArgument(Where(path, f.node("batch_rows")->source()) +
                           "[fleet] batch_rows must be between 1 and 10000000");
  // Shared roots are roots too (watched and read while this host holds their lease).
  std::vector<std::string> shared;
  TW_RETURN_IF_ERROR(f.GetStrings("shared_roots", &shared));
  if (!shared.empty() && o.conninfo.empty())
    return InvalidArgument(Where(path, f.node("shared_roots")->source()) +
                           "[fleet] shared_roots need postgres: the leases live there");
  for (const auto& r : shared) {
    o.shared_roots.push_back(Resolve(base, r));
    c->roots.push_back(o.shared_roots.back());
  }
  TW_RETURN_IF_ERROR(f.Get("lease_seconds", "a number of seconds", &o.lease_seconds));
  if (o.lease_seconds < 1 || o.lease_seconds > 3600)
    return InvalidArgument(Where(path, f.node("lease_seconds")->source()) +
                           "[fleet] lease_seconds must be between 1 and 3600");
  // A password written in the file (or in its connection string) is only as safe as the file.
  struct stat st {};
  if (literal && ::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    return InvalidArgument(path + ": holds the [fleet] password but is readable by group or others; chmod 600 it, "
                           "or use password_env, password_file or password_credential");
  return Status::Ok();
}

// [notify]: max_age_hours. [[notify.channel]]: one table per channel (docs/notifications.md).
Status LoadNotifySection(const std::string& path, const fs::path& base, const toml::table& root, Config* c) {
  const toml::node* n = root.get("notify");
  if (!n) return Status::Ok();
  if (!n->is_table()) return InvalidArgument(Where(path, n->source()) + "'notify' must be a table");
  const toml::table& t = *n->as_table();
  Section s(path, "notify", t);
  TW_RETURN_IF_ERROR(s.CheckKeys({"max_age_hours", "channel"}));
  double hours = c->notify_max_age_seconds / 3600;
  TW_RETURN_IF_ERROR(s.Get("max_age_hours", "a number of hours", &hours));
  if (hours <= 0 || hours > 24 * 365)
    return InvalidArgument(Where(path, s.node("max_age_hours")->source()) +
                           "[notify] max_age_hours must be between 0 and 8760");
  c->notify_max_age_seconds = hours * 3600;
  const toml::node* chn = t.get("channel");
  if (!chn) return Status::Ok();
  const toml::array* arr = chn->as_array();
  if (!arr || !arr->is_array_of_tables())
    return InvalidArgument(Where(path, chn->source()) + "channels are [[notify.channel]] tables");
  bool literal_secret = false;
  std::set<std::string> names;
  for (const toml::node& e : *arr) {
    const toml::table& ct = *e.as_table();
    Section cs(path, "notify.channel", ct);
    std::set<std::string> known = {"name", "type", "min_severity", "rules", "runs", "send_resolved",
                                   "min_interval_seconds", "link", "timeout_seconds", "ca_file",
                                   "group_by", "group_wait_seconds", "group_interval_seconds",
                                   "repeat_interval_seconds", "digest_minutes", "events"};
    for (const std::string& key : notify::TypedChannelKeys()) known.insert(key);
    TW_RETURN_IF_ERROR(cs.CheckKeys(known));
    std::string name, type;
    TW_RETURN_IF_ERROR(cs.Get("name", "a string", &name));
    TW_RETURN_IF_ERROR(cs.Get("type", ("a string (" + notify::ChannelTypeList() + ")").c_str(), &type));
    if (name.empty()) return InvalidArgument(Where(path, e.source()) + "[[notify.channel]] needs a name");
    if (!names.insert(name).second)
      return InvalidArgument(Where(path, e.source()) + "two channels are named '" + name + "'");
    const notify::ChannelType* kind = notify::FindChannelType(type);
    if (!kind)
      return InvalidArgument(Where(path, e.source()) + "channel '" + name + "': type must be " +
                             notify::ChannelTypeList());
    // A key of another type's channel is a mistake (smtp_host on a Slack channel, url on an
    // email one), refused like a typo rather than ignored; so is grouping where a type never groups.
    const std::string a_type = (std::string("aeiou").find(type.front()) != std::string::npos ? "an " : "a ") + type;
    const std::vector<std::string> typed = notify::TypedChannelKeys();
    for (const auto& [k, v] : ct) {
      const std::string key(k.str());
      if (std::find(typed.begin(), typed.end(), key) != typed.end() && !kind->Takes(key))
        return InvalidArgument(Where(path, k.source()) + "channel '" + name + "': '" + key + "' does not apply to " +
                               a_type + " channel");
      const auto& grouping = notify::GroupingKeys();
      if (!kind->Groups() && std::find(grouping.begin(), grouping.end(), key) != grouping.end())
        return InvalidArgument(Where(path, k.source()) + "channel '" + name + "': '" + key + "' does not apply to " +
                               a_type + " channel (" + std::string(kind->no_grouping) + ")");
    }
    notify::ChannelConfig ch = notify::ChannelConfig::Defaults(name, type);
    const std::string label = "channel '" + name + "' (line " + std::to_string(e.source().begin.line) + ")";
    TW_RETURN_IF_ERROR(LoadTypedKeys(path, label, Where(path, e.source()), cs, *kind, &ch, &literal_secret));
    if (auto made = notify::MakeChannel(ch); !made.ok())
      return InvalidArgument(Where(path, e.source()) + made.status().message());
    std::string sev = diagnose::SeverityName(ch.min_severity);  // the type's default
    TW_RETURN_IF_ERROR(cs.Get("min_severity", "a string (info, warning or critical)", &sev));
    if (!diagnose::ParseSeverity(sev, &ch.min_severity))
      return InvalidArgument(Where(path, cs.node("min_severity")->source()) + "channel '" + name +
                             "': min_severity must be info, warning or critical");
    TW_RETURN_IF_ERROR(cs.GetStrings("rules", &ch.rules));
    TW_RETURN_IF_ERROR(cs.GetStrings("runs", &ch.runs));
    // The run events it gets; a typo would silently send nothing.
    TW_RETURN_IF_ERROR(cs.GetStrings("events", &ch.events));
    for (const std::string& ev : ch.events) {
      const auto& types = notify::RunEventTypes();
      if (std::find(types.begin(), types.end(), ev) == types.end()) {
        std::string list;
        for (const auto& t : types) list += (list.empty() ? "" : ", ") + t;
        return InvalidArgument(Where(path, cs.node("events")->source()) + "channel '" + name + "': unknown event '" +
                               ev + "' in events (expected some of: " + list + ")");
      }
    }
    TW_RETURN_IF_ERROR(cs.Get("send_resolved", "true or false", &ch.send_resolved));
    TW_RETURN_IF_ERROR(cs.Get("min_interval_seconds", "a number of seconds", &ch.min_interval_seconds));
    TW_RETURN_IF_ERROR(cs.Get("link", "a string (a URL template)", &ch.link_template));
    TW_RETURN_IF_ERROR(cs.Get("timeout_seconds", "a number of seconds", &ch.http.timeout_seconds));
    if (ch.min_interval_seconds < 0 || ch.http.timeout_seconds <= 0 || ch.http.timeout_seconds > 300)
      return InvalidArgument(Where(path, e.source()) + "channel '" + name +
                             "': min_interval_seconds must be >= 0 and timeout_seconds in (0, 300]");
    std::string ca;
    TW_RETURN_IF_ERROR(cs.Get("ca_file", "a string (a PEM file)", &ca));
    if (!ca.empty()) ch.http.ca_file = Resolve(base, ca);
    // Absent: HTTP(S) channels follow HTTPS_PROXY/HTTP_PROXY/NO_PROXY, email goes direct; "": none.
    if (const toml::node* key = cs.node("proxy") ? cs.node("proxy") : cs.node("proxy_env") ? cs.node("proxy_env")
                                                                                         : cs.node("proxy_credential")) {
      std::string proxy;
      bool literal = false;  // a password in the file makes the file secret too
      TW_RETURN_IF_ERROR(GetSecret(path, label, cs, "proxy", &proxy, &literal));
      if (!proxy.empty()) {
        Result<notify::Proxy> p = notify::ParseProxy(proxy);
        if (!p.ok())
          return InvalidArgument(Where(path, key->source()) + "channel '" + name + "': " + p.status().message() +
                                 " (or \"\" for none)");
        literal_secret = literal_secret || (literal && !p->password.empty());
      }
      ch.http.proxy = proxy;
    }
    TW_RETURN_IF_ERROR(LoadGroupingKeys(path, cs, c->notify_max_age_seconds, &ch));
    c->channels.push_back(std::move(ch));
  }
  // A secret written in the file is only as safe as the file.
  if (literal_secret) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
      return InvalidArgument(path + ": holds a channel url, secret, password, API key, bot token, routing key or proxy password but is readable by "
                             "group or others (mode " + mode + "); chmod 600 it, or use the _env / _credential "
                             "keys (url_env, password_credential, ...)");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Config> LoadConfigFile(const std::string& path) {
  // Non-blocking open and regular files only: a FIFO or a device named as the config must be
  // refused, not waited on or read forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return InvalidArgument(path + ": cannot read config: " + std::strerror(errno));
  struct stat st {};
  std::string text;
  Status read = ::fstat(fd, &st) != 0 ? IoError(path + ": cannot read config: " + std::strerror(errno))
                : !S_ISREG(st.st_mode)  ? InvalidArgument(path + ": cannot read config: not a regular file")
                : st.st_size > kMaxConfigBytes
                    ? InvalidArgument(path + ": cannot read config: larger than " +
                                      std::to_string(kMaxConfigBytes >> 20) + " MiB")
                    : Status::Ok();
  if (read.ok()) {
    text.resize(static_cast<size_t>(st.st_size));
    Result<size_t> n = ReadAt(fd, path, text.data(), text.size(), 0);
    if (n.ok()) text.resize(*n);
    else read = n.status();
  }
  ::close(fd);
  if (!read.ok()) return InvalidArgument(read.message());
  return ParseConfig(text, path);
}

Result<Config> ParseConfig(std::string_view text, const std::string& path) {
  TW_RETURN_IF_ERROR(CheckTomlText(text, path));  // before toml++ sees what it mishandles
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(Where(path, e.source()) + std::string(e.description()));
  }
  Config c;
  c.origin = path;
  const fs::path base = fs::absolute(path).parent_path();
  static const toml::table kEmpty;
  auto table = [&](const char* name) -> Result<const toml::table*> {
    const toml::node* n = root.get(name);
    if (!n) return &kEmpty;
    if (!n->is_table())
      return Status(InvalidArgument(Where(path, n->source()) + "'" + name + "' must be a table"));
    return n->as_table();
  };
  Section top(path, "top level", root);
  TW_RETURN_IF_ERROR(
      top.CheckKeys({"store", "watch", "ingest", "log", "rules", "roles", "notify", "console", "web", "alert", "lifecycle",
                     "s3", "fleet"}));

  Result<const toml::table*> store = table("store");
  if (!store.ok()) return store.status();
  Section s(path, "store", **store);
  TW_RETURN_IF_ERROR(s.CheckKeys({"path", "group_readable"}));
  std::string db;
  TW_RETURN_IF_ERROR(s.Get("path", "a string (a file path)", &db));
  TW_RETURN_IF_ERROR(s.Get("group_readable", "true or false", &c.store_group_readable));
  c.db_path = db.empty() ? DefaultDbPath() : Resolve(base, db);

  Result<const toml::table*> watch = table("watch");
  if (!watch.ok()) return watch.status();
  Section w(path, "watch", **watch);
  TW_RETURN_IF_ERROR(
      w.CheckKeys({"roots", "rescan_interval_seconds", "inotify", "follow_symlinks_outside_roots"}));
  std::vector<std::string> roots;
  TW_RETURN_IF_ERROR(w.GetStrings("roots", &roots));
  for (const auto& r : roots) c.roots.push_back(Resolve(base, r));
  double rescan = c.rescan_interval_ms / 1000.0;
  TW_RETURN_IF_ERROR(w.Get("rescan_interval_seconds", "a number of seconds", &rescan));
  if (rescan < 0.05 || rescan > 86400)
    return InvalidArgument(Where(path, w.node("rescan_interval_seconds")->source()) +
                           "[watch] rescan_interval_seconds must be between 0.05 and 86400");
  c.rescan_interval_ms = static_cast<int64_t>(rescan * 1000);
  TW_RETURN_IF_ERROR(w.Get("inotify", "true or false", &c.inotify));
  TW_RETURN_IF_ERROR(w.Get("follow_symlinks_outside_roots", "true or false",
                           &c.follow_symlinks_outside_roots));

  Result<const toml::table*> ingest = table("ingest");
  if (!ingest.ok()) return ingest.status();
  Section i(path, "ingest", **ingest);
  TW_RETURN_IF_ERROR(i.CheckKeys({"batch_points", "max_bytes_per_turn", "profiles_dir"}));
  TW_RETURN_IF_ERROR(i.Get("batch_points", "a positive integer", &c.batch_points));
  TW_RETURN_IF_ERROR(i.Get("max_bytes_per_turn", "a positive integer", &c.max_bytes_per_turn));
  if (c.batch_points < 1)
    return InvalidArgument(Where(path, i.node("batch_points")->source()) +
                           "[ingest] batch_points must be at least 1");
  if (c.max_bytes_per_turn < 4096)
    return InvalidArgument(Where(path, i.node("max_bytes_per_turn")->source()) +
                           "[ingest] max_bytes_per_turn must be at least 4096");
  std::string profiles_dir;
  TW_RETURN_IF_ERROR(i.Get("profiles_dir", "a string (a directory of console profiles, *.toml)", &profiles_dir));
  if (!profiles_dir.empty()) c.profiles_dir = Resolve(base, profiles_dir);
  TW_RETURN_IF_ERROR(LoadConsoleSection(path, root, &c));

  Result<const toml::table*> logt = table("log");
  if (!logt.ok()) return logt.status();
  Section l(path, "log", **logt);
  TW_RETURN_IF_ERROR(l.CheckKeys({"verbose"}));
  TW_RETURN_IF_ERROR(l.Get("verbose", "true or false", &c.verbose));
  TW_RETURN_IF_ERROR(LoadRulesSection(path, base, root, &c));
  TW_RETURN_IF_ERROR(LoadAlertSection(path, root, &c));
  TW_RETURN_IF_ERROR(LoadLifecycleSection(path, root, &c));
  TW_RETURN_IF_ERROR(LoadS3Section(path, root, &c));
  TW_RETURN_IF_ERROR(LoadNotifySection(path, base, root, &c));
  Result<const toml::table*> webt = table("web");
  if (!webt.ok()) return webt.status();
  TW_RETURN_IF_ERROR(LoadWebSection(path, **webt, &c));
  Result<const toml::table*> fleett = table("fleet");
  if (!fleett.ok()) return fleett.status();
  TW_RETURN_IF_ERROR(LoadFleetSection(path, base, **fleett, &c));
  return c;
}

namespace {

Result<std::string> ReadUrlFile(const std::string& path, const std::string& flag) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return InvalidArgument("--" + flag + ": cannot read " + path + ": " + std::strerror(errno));
  // systemd decides who reads its credentials (the mode it gives them is its business).
  const char* creds = std::getenv("CREDENTIALS_DIRECTORY");
  const bool credential = creds && *creds && path.starts_with(std::string(creds) + "/");
  if ((st.st_mode & 077) != 0 && !credential) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return InvalidArgument("--" + flag + ": " + path + " holds a secret URL but is readable by group or others (mode " +
                           mode + "); chmod 600 it");
  }
  std::ifstream in(path);
  std::string url;
  if (!in || !std::getline(in, url)) return InvalidArgument("--" + flag + ": cannot read a URL from " + path);
  while (!url.empty() && (url.back() == '\r' || url.back() == ' ')) url.pop_back();
  if (url.empty()) return InvalidArgument("--" + flag + ": " + path + " is empty");
  return url;
}

}  // namespace

Status AddCommandLineChannels(const CommandLineUrls& urls, Config* config) {
  for (const char* type : {"slack", "webhook"}) {
    const bool slack = type == std::string("slack");
    const std::string flag = slack ? "slack-webhook" : "webhook";
    std::vector<std::pair<std::string, std::string>> found;  // (where it came from, URL)
    for (const auto& u : slack ? urls.slack : urls.webhook) found.emplace_back("--" + flag, u);
    for (const auto& f : slack ? urls.slack_files : urls.webhook_files) {
      Result<std::string> u = ReadUrlFile(f, flag + "-file");
      if (!u.ok()) return u.status();
      found.emplace_back("--" + flag + "-file " + f, *u);
    }
    const char* env = slack ? "TRAINWATCH_SLACK_WEBHOOK" : "TRAINWATCH_WEBHOOK";
    if (const char* v = std::getenv(env); v && *v) found.emplace_back(std::string("$") + env, v);
    for (size_t i = 0; i < found.size(); ++i) {
      if (Result<notify::Url> u = notify::ParseUrl(found[i].second); !u.ok())
        return InvalidArgument(found[i].first + ": " + u.status().message());
      notify::ChannelConfig ch =
          notify::ChannelConfig::Defaults("cli-" + std::string(type) + (i ? "-" + std::to_string(i + 1) : ""), type);
      ch.url = found[i].second;
      config->channels.push_back(std::move(ch));
    }
  }
  return Status::Ok();
}

std::vector<notify::ChannelConfig> EffectiveChannels(const Config& config) {
  std::vector<notify::ChannelConfig> out = config.channels;
  if (out.empty()) out.push_back(notify::ChannelConfig::Defaults("console", "console"));
  // [web] base_url: a link to the finding on its run's page, where a channel has none of its own.
  if (!config.web_base_url.empty())
    for (notify::ChannelConfig& c : out)
      if (c.link_template.empty()) c.link_template = config.web_base_url + "/findings/{finding_id}";
  return out;
}

std::string DefaultDbPath() {
  const char* state = std::getenv("STATE_DIRECTORY");
  if (state && *state) {
    std::string first(state);
    first = first.substr(0, first.find(':'));  // systemd lists several, colon-separated
    return (fs::path(first) / "trainwatch.db").native();
  }
  return (fs::current_path() / "trainwatch.db").native();
}

namespace {

bool IsWildcard(char ch) { return ch == '*' || ch == '?' || ch == '['; }

// `dir` written so that glob(3) and fnmatch match it literally.
std::string EscapeGlob(const std::string& dir) {
  std::string out;
  for (char ch : dir) {
    if (IsWildcard(ch) || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace

std::pair<std::string, std::string> SplitGlobRoot(const std::string& glob) {
  // Components up to the last '/' are directories; the last is the files' pattern and never
  // part of the root. A directory component is literal if no unescaped wildcard is in it.
  const size_t last = glob.rfind('/');
  if (last == std::string::npos) return {"", glob};
  std::string root;
  size_t pos = 0;  // start of the component after `root`
  while (pos < last) {
    const size_t start = glob[pos] == '/' ? pos + 1 : pos;
    const size_t end = glob.find('/', start);  // <= last
    std::string literal;
    bool wild = false;
    for (size_t i = start; i < end && !wild; ++i) {
      if (glob[i] == '\\' && i + 1 < end) literal += glob[++i];
      else if (IsWildcard(glob[i])) wild = true;
      else literal += glob[i];
    }
    if (wild) break;
    if (!literal.empty()) root += "/" + literal;
    pos = end;
  }
  if (root.empty()) root = "/";
  return {root, glob.substr(pos + 1)};
}

Status Validate(Config* c) {
  // Rule ids and parameters first: a config that names no rule must not create a store.
  if (c->rules_enabled)
    if (const std::vector<std::string> errors = diagnose::ConfigErrors(c->rules); !errors.empty()) {
      const std::string e = errors[0].substr(std::string_view("config: ").size());
      // An [[alert]]'s error names this file and its line already.
      return InvalidArgument(e.starts_with(c->origin + ":") ? e : c->origin + ": " + e);
    }
  if (c->roots.empty() && c->console.empty())
    return InvalidArgument(c->origin + ": no roots to watch (set [watch] roots, or --logdir DIR, or "
                           "[[console]] globs)");
  for (auto& r : c->roots) {
    if (objstore::IsS3Url(r)) {  // listed by the daemon; what is wrong with it is said there
      Result<objstore::S3Location> loc = objstore::ParseS3Url(r);
      if (!loc.ok()) return InvalidArgument(c->origin + ": root " + loc.status().message());
      r = "s3://" + loc->bucket + (loc->prefix.empty() ? "" : "/" + loc->prefix.substr(0, loc->prefix.size() - 1));
      continue;
    }
    std::error_code ec;
    if (!fs::is_directory(r, ec))
      return InvalidArgument(c->origin + ": root '" + r + "' is not a directory");
    if (::access(r.c_str(), R_OK | X_OK) != 0)
      return InvalidArgument(c->origin + ": root '" + r + "' is not readable");
    r = fs::canonical(r, ec).native();
  }
  // A console glob's root as a root: a readable directory, in its canonical form (the path the
  // ingester compares a file's real path with), and the glob rewritten under it so that every
  // path it matches, and the store keeps, is under that canonical root.
  for (auto& g : c->console) {
    const std::string where = c->origin + (g.line > 0 ? ":" + std::to_string(g.line) : "") +
                              ": [[console]] glob '" + g.glob + "': ";
    const auto [root, rest] = SplitGlobRoot(g.glob);
    std::error_code ec;
    if (!fs::is_directory(root, ec))
      return InvalidArgument(where + "its directory '" + root + "' is not a directory");
    if (::access(root.c_str(), R_OK | X_OK) != 0)
      return InvalidArgument(where + "its directory '" + root + "' is not readable");
    const std::string canonical = fs::canonical(root, ec).native();
    if (ec) return InvalidArgument(where + "its directory '" + root + "': " + ec.message());
    g.root = canonical;
    g.glob = EscapeGlob(canonical) + (canonical == "/" ? "" : "/") + rest;
  }
  // The user's console profiles: one that does not load would read nothing, silently, so it is
  // refused like a typo in this file (on SIGHUP the running configuration is kept).
  c->profiles = nullptr;
  if (!c->profiles_dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(c->profiles_dir, ec))
      return InvalidArgument(c->origin + ": [ingest] profiles_dir '" + c->profiles_dir + "' is not a directory");
    std::vector<std::string> errors;
    std::shared_ptr<const decode::ProfileSet> profiles = decode::ProfileSet::Load(c->profiles_dir, &errors);
    if (!errors.empty())
      return InvalidArgument(c->origin + ": [ingest] profiles_dir: " + errors.front() +
                             (errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : ""));
    c->profiles = std::move(profiles);
  }
  const fs::path dir = fs::absolute(c->db_path).parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return InvalidArgument(c->origin + ": the store's directory '" + dir.native() +
                           "' does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    const bool rofs = errno == EROFS;
    return Status(Code::kReadOnly, c->origin + ": the store's directory '" + dir.native() + "' is not writable" +
                                       (rofs ? " (a read-only file system)" : ""));
  }
  return Status::Ok();
}

}  // namespace tw::app

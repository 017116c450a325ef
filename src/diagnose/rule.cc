#include "diagnose/rule.h"

#include "base/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "diagnose/roles.h"
#include "diagnose/verdict.h"

namespace tw::diagnose {

namespace fs = std::filesystem;

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kCritical: return "critical";
  }
  return "warning";
}

bool ParseSeverity(std::string_view s, Severity* out) {
  if (s == "info") *out = Severity::kInfo;
  else if (s == "warning") *out = Severity::kWarning;
  else if (s == "critical") *out = Severity::kCritical;
  else return false;
  return true;
}

namespace {

std::vector<std::string> SplitList(std::string_view s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in{std::string(s)};
  while (std::getline(in, item, ',')) {
    std::string_view t = TrimSpace(item);
    if (!t.empty()) out.emplace_back(t);
  }
  return out;
}

// A finite number: from_chars also reads "nan" and "inf", which no threshold or duration means
// (a NaN `for` or parameter makes every comparison false: the rule silently never fires).
bool ParseNumber(std::string_view s, double* out) {
  s = TrimSpace(s);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*out);
}

bool ValidName(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// "window = 100: trailing window" -> name, default, description.
Status ParseParam(std::string_view v, RuleParam* p) {
  const size_t eq = v.find('=');
  if (eq == std::string_view::npos) return InvalidArgument("expected 'param NAME = NUMBER: description'");
  p->name = std::string(TrimSpace(v.substr(0, eq)));
  if (!ValidName(p->name)) return InvalidArgument("parameter name '" + p->name + "' is not [A-Za-z0-9_]+");
  std::string_view rest = v.substr(eq + 1);
  const size_t colon = rest.find(':');
  if (colon != std::string_view::npos) {
    p->description = std::string(TrimSpace(rest.substr(colon + 1)));
    rest = rest.substr(0, colon);
  }
  // from_chars reads "nan" and "inf": a threshold that compares false (or true) with everything.
  if (!ParseNumber(rest, &p->default_value))
    return InvalidArgument("parameter " + p->name + ": '" + std::string(TrimSpace(rest)) + "' is not a finite number");
  return Status::Ok();
}

// "run_classes, run_planned_steps": the names a needs_rows header may use.
std::string FactViewNames() {
  std::string out;
  for (const RunFactView& f : RunFactViews()) out += (out.empty() ? "" : ", ") + f.name;
  return out;
}

}  // namespace

bool Rule::CanRunWith(const std::set<std::string>& have) const {
  const auto has = [&](const std::string& r) { return have.count(r) > 0; };
  return std::all_of(roles.begin(), roles.end(), has) &&
         (roles_any.empty() || std::any_of(roles_any.begin(), roles_any.end(), has));
}

Result<Rule> ParseRule(std::string_view text, const std::string& origin) {
  Rule r;
  r.origin = origin;
  r.sql = std::string(text);
  std::istringstream in{std::string(text)};
  std::string line;
  int lineno = 0;
  // The header is the leading run of comment lines, up to a bare "--"; continuation lines
  // ("--   more text") extend the previous cause/fix/title.
  std::string* last_text = nullptr;
  auto fail = [&](const std::string& why) {
    return InvalidArgument(origin + ":" + std::to_string(lineno) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++lineno;
    std::string_view l = TrimSpace(line);
    if (l.empty()) continue;
    if (!l.starts_with("--")) break;
    std::string_view body = l.substr(2);
    if (TrimSpace(body).empty()) break;  // a bare "--" ends the header: prose may follow
    const size_t colon = body.find(':');
    std::string_view key = colon == std::string_view::npos ? "" : TrimSpace(body.substr(0, colon));
    std::string_view value = colon == std::string_view::npos ? "" : TrimSpace(body.substr(colon + 1));
    // A key is a word of [a-z_]; "--   length): more" continues the text above it.
    const bool is_key = colon != std::string_view::npos && !key.empty() &&
                        key.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string_view::npos;
    if (TrimSpace(body).starts_with("param ")) {
      RuleParam p;
      if (Status st = ParseParam(TrimSpace(body).substr(6), &p); !st.ok()) return fail(st.message());
      r.params.push_back(std::move(p));
      last_text = nullptr;
      continue;
    }
    if (!is_key) {
      if (last_text && !TrimSpace(body).empty()) *last_text += " " + std::string(TrimSpace(body));
      continue;
    }
    last_text = nullptr;
    if (key == "id") {
      if (!ValidName(value)) return fail("id must be [A-Za-z0-9_]+");
      r.id = std::string(value);
    } else if (key == "title") {
      r.title = std::string(value);
      last_text = &r.title;
    } else if (key == "severity") {
      if (!ParseSeverity(value, &r.severity)) return fail("severity must be info, warning or critical");
    } else if (key == "roles") {
      r.roles = SplitList(value);
    } else if (key == "roles_any") {
      r.roles_any = SplitList(value);
    } else if (key == "needs_rows") {
      r.needs_rows = SplitList(value);
      for (const std::string& v : r.needs_rows)
        if (std::none_of(RunFactViews().begin(), RunFactViews().end(), [&](const RunFactView& f) { return f.name == v; }))
          return fail("needs_rows names '" + v + "', not a run fact view (" + FactViewNames() + ")");
    } else if (key == "scope") {
      if (value != "run" && value != "all") return fail("scope must be run or all");
      r.scope_all = value == "all";
    } else if (key == "for") {
      if (!ParseNumber(value, &r.for_seconds) || r.for_seconds < 0)
        return fail("for must be a number of seconds >= 0");
    } else if (key == "inhibited_by") {
      r.inhibited_by = SplitList(value);
    } else if (key == "fires") {
      if (value != "once_per_onset" && value != "per_condition")
        return fail("fires must be per_condition (the default) or once_per_onset");
      r.once_per_onset = value == "once_per_onset";
    } else if (key == "cause") {
      r.cause = std::string(value);
      last_text = &r.cause;
    } else if (key == "fix") {
      r.fix = std::string(value);
      last_text = &r.fix;
    } else {
      return fail("unknown header key '" + std::string(key) +
                  "' (expected id, title, severity, roles, roles_any, needs_rows, scope, for, inhibited_by, fires, param, "
                  "cause, fix)");
    }
  }
  if (r.id.empty()) return InvalidArgument(origin + ": the header has no '-- id:' line");
  // The SELECT starts at the first line that is neither blank nor a comment.
  std::istringstream body{std::string(text)};
  for (int n = 1; std::getline(body, line); ++n) {
    std::string_view l = TrimSpace(line);
    if (!l.empty() && !l.starts_with("--")) {
      r.sql_line = n;
      break;
    }
  }
  if (r.title.empty()) r.title = r.id;
  return r;
}

std::vector<Rule> LoadRules(const std::string& user_dir, std::vector<std::string>* errors) {
  std::vector<Rule> rules;
  auto add = [&](Result<Rule> r) {
    if (!r.ok()) {
      errors->push_back(r.status().message());
      return;
    }
    if (r->id == kRunVerdictId) {  // the engine's own finding: a rule of that id would collide
      errors->push_back(r->origin + ": the id " + r->id + " is reserved (the verdict the engine computes)");
      return;
    }
    auto same = std::find_if(rules.begin(), rules.end(), [&](const Rule& x) { return x.id == r->id; });
    if (same != rules.end()) *same = std::move(*r);
    else rules.push_back(std::move(*r));
  };
  for (const auto& e : EmbeddedRules()) add(ParseRule(e.text, std::string("builtin:") + e.name));
  if (user_dir.empty()) return rules;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(user_dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".sql") files.push_back(it->path());
  if (ec) {
    errors->push_back(user_dir + ": cannot list rules: " + ec.message());
    return rules;
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) {
      errors->push_back(f.native() + ": cannot read");
      continue;
    }
    add(ParseRule(text.str(), f.native()));
  }
  return rules;
}

}  // namespace tw::diagnose

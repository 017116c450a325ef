#include "notify/group.h"

#include <algorithm>
#include <set>

#include "base/json.h"
#include "notify/render.h"

namespace tw::notify {

namespace {

void Bump(std::vector<std::pair<std::string, size_t>>& counts, const std::string& name) {
  for (auto& [n, c] : counts)
    if (n == name) {
      c++;
      return;
    }
  counts.emplace_back(name, 1);
}

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string Names(const std::vector<std::pair<std::string, size_t>>& counts, size_t max_names) {
  std::string out;
  for (size_t i = 0; i < counts.size() && i < max_names; ++i)
    out += (i ? ", " : "") + counts[i].first + " " + std::to_string(counts[i].second);
  if (counts.size() > max_names) out += ", and " + std::to_string(counts.size() - max_names) + " more";
  return out;
}

}  // namespace

bool IsGroupField(std::string_view field) { return field == "run" || field == "rule"; }

std::string GroupKey(const std::vector<std::string>& group_by, std::string_view run, std::string_view rule) {
  const bool by_rule = std::find(group_by.begin(), group_by.end(), "rule") != group_by.end();
  const bool by_run = std::find(group_by.begin(), group_by.end(), "run") != group_by.end();
  Json key;
  if (by_rule) key.Str("rule", rule);
  if (by_run) key.Str("run", run);
  return key.str();
}

std::vector<std::pair<std::string, std::string>> GroupLabels(const std::vector<std::string>& group_by,
                                                             const std::vector<Notification>& items) {
  std::vector<std::pair<std::string, std::string>> labels;
  if (items.empty()) return labels;
  for (const char* field : {"rule", "run"}) {
    if (std::find(group_by.begin(), group_by.end(), field) == group_by.end()) continue;
    const auto value = [&](const Notification& n) { return std::string_view(field) == "rule" ? n.rule : n.run; };
    const std::string first = value(items[0]);
    if (std::all_of(items.begin(), items.end(), [&](const Notification& n) { return value(n) == first; }))
      labels.emplace_back(field, first);
  }
  return labels;
}

GroupCounts CountGroup(const Group& g) {
  GroupCounts c;
  std::set<int64_t> findings;
  for (const Notification& n : g.items) {
    if (n.finding_id == 0 || findings.insert(n.finding_id).second) c.findings++;
    Bump(c.events, n.event);
    Bump(c.rules, n.rule);
    Bump(c.runs, n.run);
  }
  return c;
}

std::string EventWords(std::string_view event) {
  if (event == "finding.firing") return "firing";
  if (event == "finding.escalated") return "escalated";
  if (event == "finding.resolved") return "resolved";
  if (event == "finding.repeat") return "still firing";
  if (event.starts_with("run.")) return std::string(event.substr(4));  // finished, crashed, ...
  return std::string(event);
}

std::string GroupTitle(const Group& g) {
  const GroupCounts c = CountGroup(g);
  if (g.kind == "digest")
    return "Digest: " + Plural(g.items.size(), "change", "changes") + " to " +
           Plural(c.findings, "finding", "findings");
  std::string t = Plural(c.findings, "finding", "findings");
  for (const auto& [k, v] : g.labels)
    if (k == "rule") t += ": " + (g.items.empty() || g.items[0].title.empty() ? v : g.items[0].title);
  for (const auto& [k, v] : g.labels)
    if (k == "run") t += " on run " + v;
  return t;
}

std::string GroupSummary(const Group& g, const std::string& separator, size_t max_names) {
  const GroupCounts c = CountGroup(g);
  std::string s;
  for (size_t i = 0; i < c.events.size(); ++i)
    s += (i ? separator : "") + std::to_string(c.events[i].second) + " " + EventWords(c.events[i].first);
  if (g.kind == "digest") {
    s += "\nBy rule: " + Names(c.rules, max_names);
    s += "\nBy run: " + Names(c.runs, max_names);
  }
  return s;
}

std::string GroupPayload(const Group& g, std::string_view channel, double now, std::string_view link_template) {
  const GroupCounts c = CountGroup(g);
  Json labels;
  for (const auto& [k, v] : g.labels) labels.Str(k, v);
  const auto counts = [](const std::vector<std::pair<std::string, size_t>>& v) {
    Json j;
    for (const auto& [k, n] : v) j.Num(k, static_cast<double>(n));
    return j;
  };
  Json group;
  group.Str("kind", g.kind).Str("channel", channel).Nested("labels", labels)
      .Num("count", static_cast<double>(g.items.size())).Num("findings", static_cast<double>(c.findings))
      .Num("since", g.since).Nested("events", counts(c.events)).Nested("rules", counts(c.rules))
      .Nested("runs", counts(c.runs));
  std::string items = "[";
  for (size_t i = 0; i < g.items.size(); ++i)
    items += (i ? "," : "") + ToPayload(g.items[i], ExpandLinkTemplate(link_template, g.items[i]));
  items += "]";
  Json j;
  j.Num("version", 1).Str("type", g.kind).Num("time", now).Nested("group", group).Raw("notifications", items);
  return j.str();
}

}  // namespace tw::notify

// Groups of notifications: what one grouped message (Alertmanager-style grouping by run and/or
// rule) or one digest carries, and the parts every channel renders it with. The Deliverer
// (deliverer.h) forms groups from the outbox at send time; docs/notifications.md has the rules.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "notify/notification.h"

namespace tw::notify {

struct Group {
  std::string kind = "group";  // "group" (by the channel's group_by) or "digest" (all its changes)
  // The values the items share, of the fields grouped by: {{"run", "exp/a"}}. Empty for a digest.
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<Notification> items;  // in the order they were queued
  double since = 0;                 // when the oldest item was queued (unix seconds)
};

// The fields a channel may group by.
bool IsGroupField(std::string_view field);  // "run" or "rule"

// The key of a notification's group under `group_by` (fields in any order): a JSON object of the
// values in a fixed order, {"rule":"...","run":"..."}; stored in notify_groups.
std::string GroupKey(const std::vector<std::string>& group_by, std::string_view run, std::string_view rule);

// The labels of `items`: for each field of `group_by` (rule before run), its value when every item
// has the same one.
std::vector<std::pair<std::string, std::string>> GroupLabels(const std::vector<std::string>& group_by,
                                                             const std::vector<Notification>& items);

// How many of each, in first-seen order.
struct GroupCounts {
  size_t findings = 0;  // distinct findings (test messages count one each)
  std::vector<std::pair<std::string, size_t>> events, rules, runs;
};
GroupCounts CountGroup(const Group& g);

// "3 findings on run exp/a", "2 findings: Loss spikes on run exp/a", "Digest: 5 changes to 3
// findings".
std::string GroupTitle(const Group& g);
// "2 firing · 1 resolved" (events in words); a digest adds the counts per rule and per run,
// one line each ("By rule: loss_spikes 2, non_finite_loss 1"), `max_names` names at most.
std::string GroupSummary(const Group& g, const std::string& separator = " · ", size_t max_names = 10);
// An event in words: firing, escalated, resolved, still firing, test.
std::string EventWords(std::string_view event);

// The webhook body for a group, payload version 1 (docs/notifications.md):
// {"version":1,"type":"group"|"digest","time":now,"group":{...},"notifications":[payloads]}.
std::string GroupPayload(const Group& g, std::string_view channel, double now,
                         std::string_view link_template = {});

}  // namespace tw::notify

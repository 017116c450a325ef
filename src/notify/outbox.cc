#include "notify/outbox.h"

#include <cmath>
#include <cstdio>

#include "notify/render.h"

namespace tw::notify {

Result<bool> Silenced(store::Db& db, const std::string& run, const std::string& rule, double now) {
  Result<store::Stmt> q = db.Prepare(
      "SELECT 1 FROM silences WHERE expires > ?1 AND ?2 GLOB run_glob AND (rule = '' OR rule = ?3) LIMIT 1");
  if (!q.ok()) return q.status();
  q->Bind(1, now).Bind(2, run).Bind(3, rule);
  Result<bool> row = q->Step();
  if (!row.ok()) return row.status();
  return *row;
}

namespace {
// Printable text of at most `max` bytes (tabs and newlines refused too: these are one-line
// fields shown in tables).
bool PlainText(const std::string& s, size_t max) {
  if (s.size() > max) return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}
}  // namespace

Result<int64_t> AddSilence(store::Db& db, const NewSilence& s, double now) {
  if (s.run_glob.empty() || !PlainText(s.run_glob, 1024))
    return InvalidArgument("run: a run glob of 1 to 1024 printable characters is needed");
  if (!PlainText(s.rule, 128)) return InvalidArgument("rule: at most 128 printable characters");
  if (!PlainText(s.comment, 1000)) return InvalidArgument("comment: at most 1000 printable characters");
  if (!(s.seconds > 0 && s.seconds <= 366 * 86400.0))
    return InvalidArgument("duration: must be more than 0 and at most 366 days");
  Result<store::Stmt> ins = db.Prepare(
      "INSERT INTO silences(run_glob, rule, created, expires, comment) VALUES (?,?,?,?,?)");
  if (!ins.ok()) return ins.status();
  TW_RETURN_IF_ERROR(ins->Bind(1, s.run_glob).Bind(2, s.rule).Bind(3, now).Bind(4, now + s.seconds)
                         .Bind(5, s.comment).Run());
  return db.LastInsertId();
}

namespace {

// Inserts `n` for each channel that routes it, under the key `key_prefix` + channel.
Result<int> Insert(store::Db& db, const std::vector<ChannelConfig>& channels, const Notification& n,
                   std::optional<int64_t> transition_id, const std::string& key_prefix, double now) {
  Result<store::Stmt> ins = db.Prepare(
      "INSERT OR IGNORE INTO outbox(channel, idempotency_key, transition_id, finding_id, event, payload, "
      "created, next_attempt) VALUES (?,?,?,?,?,?,?,?)");
  if (!ins.ok()) return ins.status();
  const std::string payload = ToPayload(n);
  int queued = 0;
  for (const ChannelConfig& c : channels) {
    if (!Routes(c, n)) continue;
    ins->Bind(1, c.name).Bind(2, key_prefix + c.name);
    if (transition_id) ins->Bind(3, *transition_id);
    else ins->BindNull(3);
    if (n.finding_id) ins->Bind(4, n.finding_id);
    else ins->BindNull(4);
    // A channel with a link ([web] base_url's, or its own) carries it in the payload: a webhook
    // sends the payload as queued.
    ins->Bind(5, n.event)
        .Bind(6, c.link_template.empty() ? payload : ToPayload(n, ExpandLinkTemplate(c.link_template, n)))
        .Bind(7, now)
        .Bind(8, now);
    TW_RETURN_IF_ERROR(ins->Run());
    queued += static_cast<int>(db.Changes());
  }
  return queued;
}

}  // namespace

Result<int> QueueRunEvent(store::Db& db, const std::vector<ChannelConfig>& channels, int64_t event_id, double now) {
  bool announced = false;
  Result<Notification> n = LoadRunNotification(db, event_id, &announced);
  if (!n.ok()) return n.status();
  if (!announced) return 0;
  Result<bool> silenced = Silenced(db, n->run, n->rule, now);
  if (!silenced.ok()) return silenced.status();
  if (*silenced) return 0;
  return Insert(db, channels, *n, std::nullopt, "tw-run-" + std::to_string(event_id) + "-", now);
}

Result<int> Enqueue(store::Db& db, const std::vector<ChannelConfig>& channels, const Notification& n,
                    std::optional<int64_t> transition_id, double now) {
  if (n.event != "test") {
    Result<bool> silenced = Silenced(db, n.run, n.rule, now);
    if (!silenced.ok()) return silenced.status();
    if (*silenced) return 0;
  }
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%.0f", std::floor(now * 1e6));
  return Insert(db, channels, n, transition_id,
                transition_id ? "tw-" + std::to_string(*transition_id) + "-" : "tw-test-" + std::string(stamp) + "-", now);
}

Result<int> QueueTransition(store::Db& db, const std::vector<ChannelConfig>& channels,
                            int64_t transition_id, const std::string& from, const std::string& to,
                            double now) {
  std::string event;
  if (to == "firing" && from != "firing") {
    event = "finding.firing";
  } else if (to == "firing" && from == "firing") {
    // A severity change: announced only when it rose (the previous transition says from what).
    Result<store::Stmt> q = db.Prepare(
        "SELECT p.severity, t.severity FROM finding_transitions t JOIN finding_transitions p "
        "ON p.finding_id = t.finding_id AND p.transition_id < t.transition_id "
        "WHERE t.transition_id = ? ORDER BY p.transition_id DESC LIMIT 1");
    if (!q.ok()) return q.status();
    q->Bind(1, transition_id);
    Result<bool> row = q->Step();
    if (!row.ok()) return row.status();
    diagnose::Severity before = diagnose::Severity::kInfo, after = diagnose::Severity::kInfo;
    if (!*row || !diagnose::ParseSeverity(q->Text(0), &before) || !diagnose::ParseSeverity(q->Text(1), &after) ||
        after <= before)
      return 0;
    event = "finding.escalated";
  } else if (to == "resolved" && from == "firing") {
    event = "finding.resolved";
  } else {
    return 0;
  }
  Result<Notification> n = LoadNotification(db, transition_id, event);
  if (!n.ok()) return n.status();
  return Enqueue(db, channels, *n, transition_id, now);
}

Result<std::vector<OutboxCounts>> CountOutbox(store::Db& db) {
  Result<store::Stmt> q = db.Prepare(
      "SELECT channel, sum(state = 'pending'), sum(state = 'sent'), sum(state = 'dead'), "
      "COALESCE(min(CASE WHEN state = 'pending' THEN created END), 0), "
      "COALESCE((SELECT last_error FROM outbox o2 WHERE o2.channel = o.channel AND o2.last_error != '' "
      "          ORDER BY message_id DESC LIMIT 1), '') "
      "FROM outbox o GROUP BY channel ORDER BY channel");
  if (!q.ok()) return q.status();
  std::vector<OutboxCounts> out;
  TW_RETURN_IF_ERROR(q->EachRow([&] { out.push_back({q->Text(0), q->Int(1), q->Int(2), q->Int(3), q->Real(4), q->Text(5)}); }));
  return out;
}

Result<std::vector<WaitingGroup>> ListWaiting(store::Db& db) {
  Result<store::Stmt> q = db.Prepare(
      "SELECT channel, group_key, messages, oldest, due FROM notify_waiting ORDER BY channel, due, group_key");
  if (!q.ok()) return std::vector<WaitingGroup>{};  // a store from before notify_waiting
  std::vector<WaitingGroup> out;
  TW_RETURN_IF_ERROR(q->EachRow([&] { out.push_back({q->Text(0), q->Text(1), q->Int(2), q->Real(3), q->Real(4)}); }));
  return out;
}

}  // namespace tw::notify

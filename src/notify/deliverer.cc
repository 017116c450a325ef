#include "notify/deliverer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <set>

#include "base/log.h"
#include "diagnose/sql_functions.h"
#include "notify/http_client.h"
#include "notify/outbox.h"
#include "store/migrations.h"

namespace tw::notify {

// A pending outbox message, as RunOnce sees it.
struct Deliverer::Row {
  int64_t id = 0;
  std::string key;      // its own idempotency key
  int64_t finding = 0;  // 0: none (a test message)
  int64_t attempts = 0;
  double next_attempt = 0, created = 0;
  int64_t batch = 0;    // the send it is frozen in (its first message's id); 0: none yet
  std::string group;    // its group's key under the channel's settings ("" without grouping)
  std::string run, rule;  // of its finding, from the payload
  bool critical = false;  // a finding firing or escalated at critical severity
};

// What may go as one send: a frozen send (retrying, or cut off by a crash), or the waiting
// messages of one group (one message, without grouping).
struct Deliverer::Unit {
  std::vector<Row*> rows;  // in queue order
  bool frozen = false;
  std::string group;
};

namespace {

// How a channel groups: not at all (each message alone, as it comes), by group_by, or every
// message in one digest per period.
struct Grouping {
  enum class Mode { kNone, kGroup, kDigest };
  Mode mode = Mode::kNone;
  double wait = 0, interval = 0;
};

Grouping GroupingOf(const ChannelConfig& c) {
  Grouping g;
  if (c.digest_minutes > 0) {
    g.mode = Grouping::Mode::kDigest;
    g.wait = g.interval = c.digest_minutes * 60;
  } else if (!c.group_by.empty()) {
    g.mode = Grouping::Mode::kGroup;
    g.wait = c.group_wait_seconds;
    g.interval = c.group_interval_seconds;
  }
  return g;
}

constexpr const char* kDigestKey = "digest";

template <typename F>
Status InTransaction(store::Db& db, F f) {
  TW_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  Status st = f();
  if (!st.ok()) {
    (void)db.Exec("ROLLBACK");
    return st;
  }
  return db.Exec("COMMIT");
}

std::string Describe(const std::vector<int64_t>& ids) {
  if (ids.size() == 1) return "message " + std::to_string(ids[0]);
  return "group send of " + std::to_string(ids.size()) + " messages (" + std::to_string(ids.front()) + ".." +
         std::to_string(ids.back()) + ")";
}

}  // namespace

Deliverer::Deliverer(std::unique_ptr<store::Db> db, std::vector<std::unique_ptr<Channel>> channels,
                     DeliveryOptions options)
    : db_(std::move(db)), channels_(std::move(channels)), options_(options),
      rng_(options.seed ? options.seed
                        : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) {}

Result<std::unique_ptr<Deliverer>> Deliverer::Open(const std::string& db_path,
                                                   std::vector<std::unique_ptr<Channel>> channels,
                                                   DeliveryOptions options) {
  Result<std::unique_ptr<store::Db>> db = store::Db::Open(db_path, store::Db::Mode::kReadWrite);
  if (!db.ok()) return db.status();
  TW_RETURN_IF_ERROR(store::CheckOurs(**db));
  // A fresh connection syncs every commit (FULL): one fsync per message marked sent capped
  // delivery at about 1,000 messages/s. In WAL mode NORMAL loses no commit when the process
  // dies; a power loss may lose the last marks, and those messages go once more, with their
  // idempotency keys: the documented in-flight case.
  TW_RETURN_IF_ERROR((*db)->Exec("PRAGMA synchronous=NORMAL"));
  // Messages for channels that no longer exist would wait forever: say so, once, and keep them.
  std::string names;
  for (const auto& c : channels) names += (names.empty() ? "" : ",") + c->config().name;
  Result<store::Stmt> orphans = (*db)->Prepare(
      "UPDATE outbox SET state = 'dead', last_error = 'channel ''' || channel || ''' is no longer configured' "
      "WHERE state = 'pending' AND instr(',' || ?1 || ',', ',' || channel || ',') = 0");
  if (!orphans.ok()) return orphans.status();
  orphans->Bind(1, names);
  TW_RETURN_IF_ERROR(orphans->Run());
  if (const int64_t n = (*db)->Changes(); n > 0)
    log::Warning("notify: " + std::to_string(n) +
                 " pending message(s) are for channels no longer configured; marked dead");
  // What waited, and when groups last went, on channels that are gone is of no use.
  for (const char* table : {"notify_waiting", "notify_groups"}) {
    Result<store::Stmt> gone = (*db)->Prepare(std::string("DELETE FROM ") + table +
                                              " WHERE instr(',' || ?1 || ',', ',' || channel || ',') = 0");
    if (!gone.ok()) return gone.status();
    gone->Bind(1, names);
    TW_RETURN_IF_ERROR(gone->Run());
  }
  // A repeat shows the recent curve, as the first message did (tw_sparkline).
  TW_RETURN_IF_ERROR(diagnose::RegisterSqlFunctions(**db));
  std::unique_ptr<Deliverer> d(new Deliverer(std::move(*db), std::move(channels), options));
  TW_RETURN_IF_ERROR(d->Prepare());
  return d;
}

Status Deliverer::Prepare() {
  const auto prepare = [&](store::Stmt* s, const char* sql) -> Status {
    Result<store::Stmt> p = db_->Prepare(sql);
    if (!p.ok()) return p.status();
    *s = std::move(*p);
    return Status::Ok();
  };
  TW_RETURN_IF_ERROR(prepare(&pending_,
      "SELECT message_id, idempotency_key, COALESCE(finding_id, 0), attempts, next_attempt, created, "
      "COALESCE(batch, 0), CASE WHEN json_valid(payload) THEN COALESCE(json_extract(payload, '$.finding.run'), json_extract(payload, '$.run.name')) END, "
      "CASE WHEN json_valid(payload) THEN COALESCE(json_extract(payload, '$.finding.rule'), json_extract(payload, '$.run.event')) END, "
      "event = 'run.crashed' OR (event IN ('finding.firing', 'finding.escalated') AND json_valid(payload) "
      "  AND json_extract(payload, '$.finding.severity') IS 'critical') "
      "FROM outbox WHERE channel = ?1 AND state = 'pending' ORDER BY message_id LIMIT ?2"));
  // A group's critical changes sent since ?2 (its run ?3 and rule ?4, each NULL when the
  // channel does not group by it).
  TW_RETURN_IF_ERROR(prepare(&critical_sent_,
      "SELECT EXISTS (SELECT 1 FROM outbox WHERE channel = ?1 AND state = 'sent' AND sent_at >= ?2 "
      "  AND json_valid(payload) AND (event = 'run.crashed' OR (event IN ('finding.firing', 'finding.escalated') "
      "  AND json_extract(payload, '$.finding.severity') IS 'critical')) "
      "  AND (?3 IS NULL OR COALESCE(json_extract(payload, '$.finding.run'), json_extract(payload, '$.run.name')) IS ?3) "
      "  AND (?4 IS NULL OR COALESCE(json_extract(payload, '$.finding.rule'), json_extract(payload, '$.run.event')) IS ?4))"));
  TW_RETURN_IF_ERROR(prepare(&payload_, "SELECT payload FROM outbox WHERE message_id = ?1"));
  TW_RETURN_IF_ERROR(prepare(&freeze_, "UPDATE outbox SET batch = ?2, next_attempt = ?3 WHERE message_id = ?1"));
  TW_RETURN_IF_ERROR(prepare(&update_,
      "UPDATE outbox SET state = ?2, attempts = ?3, next_attempt = ?4, last_status = ?5, "
      "last_error = ?6, sent_at = CASE WHEN ?2 = 'sent' THEN ?7 ELSE sent_at END WHERE message_id = ?1"));
  TW_RETURN_IF_ERROR(prepare(&group_get_,
      "SELECT last_sent, last_message_id FROM notify_groups WHERE channel = ?1 AND group_key = ?2"));
  TW_RETURN_IF_ERROR(prepare(&group_put_,
      "INSERT INTO notify_groups(channel, group_key, last_sent, last_message_id) VALUES (?1, ?2, ?3, ?4) "
      "ON CONFLICT (channel, group_key) DO UPDATE SET last_sent = excluded.last_sent, "
      "last_message_id = excluded.last_message_id"));
  TW_RETURN_IF_ERROR(prepare(&waiting_clear_, "DELETE FROM notify_waiting WHERE channel = ?1"));
  TW_RETURN_IF_ERROR(prepare(&waiting_put_,
      "INSERT OR REPLACE INTO notify_waiting(channel, group_key, messages, oldest, due) VALUES (?1, ?2, ?3, ?4, ?5)"));
  // A group's last send matters for group_interval after it (and its leftovers go at once).
  TW_RETURN_IF_ERROR(prepare(&groups_expire_,
      "DELETE FROM notify_groups WHERE channel = ?1 AND last_sent < ?2"));
  // Per firing finding: its last message sent on the channel, unless one is waiting there.
  TW_RETURN_IF_ERROR(prepare(&firing_,
      "SELECT f.finding_id, o.message_id, o.sent_at, o.event, "
      "       (SELECT max(t.transition_id) FROM finding_transitions t WHERE t.finding_id = f.finding_id) "
      "FROM findings f JOIN outbox o ON o.message_id = "
      "  (SELECT x.message_id FROM outbox x WHERE x.finding_id = f.finding_id AND x.channel = ?1 "
      "   AND x.state = 'sent' ORDER BY x.message_id DESC LIMIT 1) "
      "WHERE f.state = 'firing' AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.finding_id = f.finding_id "
      "  AND p.channel = ?1 AND p.state = 'pending')"));
  TW_RETURN_IF_ERROR(prepare(&repeat_,
      "INSERT OR IGNORE INTO outbox(channel, idempotency_key, transition_id, finding_id, event, payload, "
      "created, next_attempt) VALUES (?,?,?,?,?,?,?,?)"));
  // A send that failed holds its channel back until its retry, across a restart too.
  Result<store::Stmt> retrying = db_->Prepare(
      "SELECT channel, max(next_attempt) FROM outbox WHERE state = 'pending' AND attempts > 0 GROUP BY channel");
  if (!retrying.ok()) return retrying.status();
  for (;;) {
    Result<bool> row = retrying->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    next_allowed_[retrying->Text(0)] = retrying->Real(1);
  }
  return Status::Ok();
}

double Deliverer::Backoff(const DeliveryOptions& o, int64_t attempts) {
  const double d = o.backoff_initial_seconds * std::pow(o.backoff_factor, static_cast<double>(std::max<int64_t>(0, attempts - 1)));
  return std::min(d, o.backoff_max_seconds);
}

Result<std::vector<Attempt>> Deliverer::RunOnce(double now) {
  std::vector<Attempt> out;
  next_due_ = INFINITY;
  if (now >= next_repeat_check_) TW_RETURN_IF_ERROR(QueueRepeats(now));
  repeats_changed_ = false;
  for (const auto& ch : channels_) TW_RETURN_IF_ERROR(RunChannel(*ch, now, &out));
  // What was just sent sets when its findings are next repeated.
  if (repeats_changed_) TW_RETURN_IF_ERROR(QueueRepeats(now));
  next_due_ = std::min(next_due_, next_repeat_check_);
  return out;
}

Status Deliverer::RunChannel(Channel& ch, double now, std::vector<Attempt>* out) {
  const ChannelConfig& c = ch.config();
  const Grouping grouping = GroupingOf(c);
  // Without grouping each message is its own send, in queue order, and a failed one holds the
  // whole channel back until its retry (next_allowed_): a pass sends at most
  // max_per_channel_per_run of the oldest, so only those are read. (Reading max_scan rows,
  // their payloads looked into, for every pass of 100 sends was two thirds of the drain's time
  // outside the sends.) A frozen send there (left by an earlier configuration that grouped)
  // makes it read max_scan rows, as before, so that the send is read whole.
  const bool ungrouped = grouping.mode == Grouping::Mode::kNone;
  int64_t scan = options_.max_scan;
  if (ungrouped) scan = std::min<int64_t>(scan, std::max(1, options_.max_per_channel_per_run));
  std::vector<Row> rows;
  const auto read = [&]() -> Status {
    rows.clear();
    pending_.Reset();
    pending_.Bind(1, c.name).Bind(2, scan);
    for (;;) {
      Result<bool> more = pending_.Step();
      if (!more.ok()) {
        pending_.Reset();
        return more.status();
      }
      if (!*more) break;
      Row r;
      r.id = pending_.Int(0);
      r.key = pending_.Text(1);
      r.finding = pending_.Int(2);
      r.attempts = pending_.Int(3);
      r.next_attempt = pending_.Real(4);
      r.created = pending_.Real(5);
      r.batch = pending_.Int(6);
      r.run = pending_.Text(7);
      r.rule = pending_.Text(8);
      r.critical = pending_.Int(9) != 0;
      if (grouping.mode == Grouping::Mode::kDigest) r.group = kDigestKey;
      else if (grouping.mode == Grouping::Mode::kGroup) r.group = GroupKey(c.group_by, r.run, r.rule);
      rows.push_back(std::move(r));
    }
    pending_.Reset();
    return Status::Ok();
  };
  TW_RETURN_IF_ERROR(read());
  if (scan < options_.max_scan && std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.batch != 0; })) {
    scan = options_.max_scan;
    TW_RETURN_IF_ERROR(read());
  }
  // Messages may wait beyond what was read: the next pass is due as theirs would have been.
  const bool cut = scan < options_.max_scan && static_cast<int64_t>(rows.size()) >= scan;

  // The sends, in the order of their first messages.
  std::vector<Unit> units;
  std::map<int64_t, size_t> frozen;
  std::map<std::string, size_t> open;
  for (Row& r : rows) {
    size_t* at = nullptr;
    if (r.batch) {
      auto [it, added] = frozen.try_emplace(r.batch, units.size());
      if (!added) at = &it->second;
    } else if (grouping.mode != Grouping::Mode::kNone) {
      auto [it, added] = open.try_emplace(r.group, units.size());
      if (!added) at = &it->second;
    }
    if (at) {
      units[*at].rows.push_back(&r);
    } else {
      Unit u;
      u.rows = {&r};
      u.frozen = r.batch != 0;
      u.group = r.group;
      units.push_back(std::move(u));
    }
  }

  // Frozen sends first (they hold the oldest messages of their findings, whatever a reload has
  // done to the grouping since), then the groups, each in the order of its oldest message.
  std::stable_partition(units.begin(), units.end(), [](const Unit& u) { return u.frozen; });

  // A message never goes before an earlier one about the same finding: a resolution never
  // overtakes its firing. (After a failed attempt the channel waits for its retry, and a
  // finding's messages share its group, so this holds by construction; this makes sure.)
  std::set<int64_t> blocked;  // findings with an earlier message not sent in this pass
  std::vector<Waiting> waiting;  // groups that wait for group_wait or group_interval
  int sends = 0;
  for (Unit& u : units) {
    if (!u.frozen)
      std::erase_if(u.rows, [&](const Row* r) { return r->finding != 0 && blocked.count(r->finding) > 0; });
    if (u.rows.empty()) continue;
    double due = 0;
    if (u.frozen) {
      for (const Row* r : u.rows) due = std::max(due, r->next_attempt);
    } else if (grouping.mode == Grouping::Mode::kNone) {
      due = u.rows[0]->next_attempt;
    } else {
      TW_RETURN_IF_ERROR(FlushOutcomes());  // what the group sent so far is read next
      group_get_.Reset();
      group_get_.Bind(1, c.name).Bind(2, u.group);
      Result<bool> row = group_get_.Step();
      if (!row.ok()) {
        group_get_.Reset();
        return row.status();
      }
      std::optional<double> last_sent;
      int64_t last_id = 0;
      if (*row) {
        last_sent = group_get_.Real(0);
        last_id = group_get_.Int(1);
      }
      group_get_.Reset();
      double oldest = INFINITY;
      for (const Row* r : u.rows) oldest = std::min(oldest, r->created);
      if (last_sent && u.rows[0]->id <= last_id) due = now;  // left over from the last send: at once
      else due = std::max(oldest + grouping.wait, last_sent ? *last_sent + grouping.interval : -INFINITY);
      if (due > now && grouping.mode == Grouping::Mode::kGroup) {
        Result<bool> urgent = CriticalIsNews(c, u, now - grouping.interval);
        if (!urgent.ok()) return urgent.status();
        if (*urgent) due = now;
      }
    }
    const double group_due = due;
    due = std::max(due, next_allowed_[c.name]);
    if (due > now || sends >= options_.max_per_channel_per_run) {
      next_due_ = std::min(next_due_, std::max(due, now));
      if (!u.frozen && grouping.mode != Grouping::Mode::kNone && group_due > now) {
        Waiting w{u.group, static_cast<int64_t>(u.rows.size()), INFINITY, due};
        for (const Row* r : u.rows) w.oldest = std::min(w.oldest, r->created);
        waiting.push_back(std::move(w));
      }
      for (const Row* r : u.rows)
        if (r->finding) blocked.insert(r->finding);
      continue;
    }
    sends++;
    const size_t before = out->size();
    TW_RETURN_IF_ERROR(Deliver(ch, u, now, out));
    if (out->size() > before && out->back().state == "pending") {
      for (const Row* r : u.rows)
        if (r->finding) blocked.insert(r->finding);
      next_due_ = std::min(next_due_, out->back().next_attempt);
    }
  }
  if (cut && sends >= options_.max_per_channel_per_run)
    next_due_ = std::min(next_due_, std::max(now, next_allowed_[c.name]));
  TW_RETURN_IF_ERROR(FlushOutcomes());
  if (grouping.mode == Grouping::Mode::kNone) return Status::Ok();
  TW_RETURN_IF_ERROR(RecordWaiting(c.name, std::move(waiting)));
  if (now < next_groups_expiry_[c.name]) return Status::Ok();
  next_groups_expiry_[c.name] = now + 3600;
  groups_expire_.Bind(1, c.name).Bind(2, now - grouping.interval - 3600);
  return groups_expire_.Run();
}

// For `trainwatch status`: written when it changed, so an idle daemon writes nothing.
Status Deliverer::RecordWaiting(const std::string& channel, std::vector<Waiting> waiting) {
  auto [it, added] = waiting_.try_emplace(channel);
  if (!added && it->second == waiting) return Status::Ok();
  TW_RETURN_IF_ERROR(InTransaction(*db_, [&]() -> Status {
    waiting_clear_.Bind(1, channel);
    TW_RETURN_IF_ERROR(waiting_clear_.Run());
    for (const Waiting& w : waiting) {
      waiting_put_.Bind(1, channel).Bind(2, w.group).Bind(3, w.messages).Bind(4, w.oldest).Bind(5, w.due);
      TW_RETURN_IF_ERROR(waiting_put_.Run());
    }
    return Status::Ok();
  }));
  it->second = std::move(waiting);
  return Status::Ok();
}

// Critical means now: a NaN burning GPU hours must not wait group_wait. A group holding a
// critical change goes at once, unless it already sent one since `since` (group_interval ago:
// then it is news the channel has had, and the rest follows as grouped).
Result<bool> Deliverer::CriticalIsNews(const ChannelConfig& c, const Unit& u, double since) {
  const auto critical = std::find_if(u.rows.begin(), u.rows.end(), [](const Row* r) { return r->critical; });
  if (critical == u.rows.end()) return false;
  const auto by = [&](const char* field) {
    return std::find(c.group_by.begin(), c.group_by.end(), field) != c.group_by.end();
  };
  critical_sent_.Reset();
  critical_sent_.Bind(1, c.name).Bind(2, since);
  if (by("run")) critical_sent_.Bind(3, (*critical)->run);
  else critical_sent_.BindNull(3);
  if (by("rule")) critical_sent_.Bind(4, (*critical)->rule);
  else critical_sent_.BindNull(4);
  Result<bool> row = critical_sent_.Step();
  const bool sent = row.ok() && *row && critical_sent_.Int(0) != 0;
  critical_sent_.Reset();
  if (!row.ok()) return row.status();
  return !sent;
}

Status Deliverer::Mark(int64_t id, const std::string& state, int64_t attempts, double next,
                       const SendResult& res, double now) {
  store::Stmt& s = update_;
  s.Bind(1, id).Bind(2, state).Bind(3, attempts).Bind(4, next);
  if (res.http_status) s.Bind(5, int64_t{res.http_status});
  else s.BindNull(5);
  s.Bind(6, res.kind == SendResult::Kind::kSent ? std::string() : res.detail).Bind(7, now);
  return s.Run();
}

Status Deliverer::FlushOutcomes() {
  if (outcomes_.empty()) return Status::Ok();
  Status st = InTransaction(*db_, [&]() -> Status {
    for (const Outcome& o : outcomes_) {
      for (int64_t id : o.ids) TW_RETURN_IF_ERROR(Mark(id, o.state, o.attempts, o.next, o.result, o.now));
      for (const std::string& key : o.groups) {
        group_put_.Bind(1, o.channel).Bind(2, key).Bind(3, o.now).Bind(4, o.newest);
        TW_RETURN_IF_ERROR(group_put_.Run());
      }
    }
    return Status::Ok();
  });
  // Marked, or not at all (the store failed): either way these outcomes are done with. Sends
  // not marked are pending still, and go again, under the same keys, as after a crash.
  outcomes_.clear();
  return st;
}

Status Deliverer::Deliver(Channel& ch, Unit& u, double now, std::vector<Attempt>* out) {
  const ChannelConfig& c = ch.config();
  const Grouping grouping = GroupingOf(c);
  const auto mark = [&](const Row& r, const std::string& state, int64_t attempts, double next,
                        const SendResult& res) {
    return Mark(r.id, state, attempts, next, res, now);
  };

  // The members: a frozen send as it was; otherwise the group's oldest messages, at most
  // max_batch (the rest go next, at once). A payload that cannot be read is dead on its own.
  std::vector<Row*> members;
  std::vector<Notification> items;
  const size_t limit = u.frozen ? u.rows.size() : static_cast<size_t>(std::max(1, options_.max_batch));
  for (Row* r : u.rows) {
    if (members.size() >= limit) break;
    payload_.Reset();
    payload_.Bind(1, r->id);
    Result<bool> found = payload_.Step();
    const std::string payload = found.ok() && *found ? payload_.Text(0) : std::string();
    payload_.Reset();
    if (!found.ok()) return found.status();
    Result<Notification> n = FromPayload(payload);
    if (n.ok()) {
      members.push_back(r);
      items.push_back(std::move(*n));
      continue;
    }
    Attempt a;
    a.message_id = r->id;
    a.message_ids = {r->id};
    a.key = r->key;
    a.channel = c.name;
    a.result = {SendResult::Kind::kPermanent, 0, -1, "unreadable payload: " + n.status().message()};
    a.state = "dead";
    a.next_attempt = now;
    TW_RETURN_IF_ERROR(mark(*r, "dead", r->attempts + 1, now, a.result));
    log::Error("notify: channel '" + c.name + "' gave up on message " + std::to_string(r->id) + ": " + a.result.detail);
    out->push_back(std::move(a));
  }
  if (members.empty()) return Status::Ok();

  // Frozen before the attempt: a retry, or a resend after a crash, is the same send.
  const int64_t first = members.front()->id, last = members.back()->id;
  const int64_t newest = u.rows.back()->id;  // the group's messages up to here were waiting now
  // A message of an ungrouped channel always goes alone, under its own key: nothing to freeze.
  if (!u.frozen && grouping.mode != Grouping::Mode::kNone) {
    TW_RETURN_IF_ERROR(InTransaction(*db_, [&]() -> Status {
      for (Row* r : members) {
        freeze_.Bind(1, r->id).Bind(2, first).Bind(3, now);
        TW_RETURN_IF_ERROR(freeze_.Run());
        r->batch = first;
      }
      return Status::Ok();
    }));
  }
  Attempt a;
  a.message_id = first;
  for (const Row* r : members) a.message_ids.push_back(r->id);
  a.key = members.size() == 1 ? members[0]->key
                              : "tw-group-" + std::to_string(first) + "-" + std::to_string(last) + "-" + c.name;
  a.channel = c.name;
  if (members.size() == 1) {
    a.result = ch.Send(items[0], a.key, now);
  } else {
    Group g;
    g.kind = grouping.mode == Grouping::Mode::kDigest ? "digest" : "group";
    if (grouping.mode == Grouping::Mode::kGroup) g.labels = GroupLabels(c.group_by, items);
    g.since = INFINITY;
    for (const Row* r : members) g.since = std::min(g.since, r->created);
    g.items = std::move(items);
    a.result = ch.SendGroup(g, a.key, now);
  }
  next_allowed_[c.name] = now + c.min_interval_seconds;

  // One outcome for all its messages.
  const SendResult& r = a.result;
  int64_t attempts = 0;
  double created = INFINITY;
  for (const Row* m : members) {
    attempts = std::max(attempts, m->attempts + 1);
    created = std::min(created, m->created);
  }
  double next = now;
  if (r.kind == SendResult::Kind::kSent) {
    a.state = "sent";
  } else if (r.kind == SendResult::Kind::kPermanent) {
    a.state = "dead";
  } else {
    double delay = r.retry_after;
    if (delay < 0) {
      std::uniform_real_distribution<double> jitter(1 - options_.jitter, 1 + options_.jitter);
      delay = Backoff(options_, attempts) * jitter(rng_);
    }
    next = now + delay;
    a.state = next - created > options_.max_age_seconds ? "dead" : "pending";
  }
  a.next_attempt = next;
  // The outcome waits to be marked with the next ones (FlushOutcomes): one transaction for
  // many sends, instead of one each.
  Outcome o;
  o.channel = c.name;
  for (const Row* m : members) o.ids.push_back(m->id);
  o.state = a.state;
  o.attempts = attempts;
  o.next = next;
  o.result = r;
  o.now = now;
  o.newest = newest;
  if (a.state == "sent" && grouping.mode != Grouping::Mode::kNone)
    for (const Row* m : members) o.groups.insert(m->group);
  if (outcomes_.empty()) first_outcome_ = std::chrono::steady_clock::now();
  outcomes_.push_back(std::move(o));
  if (static_cast<int>(outcomes_.size()) >= options_.max_unmarked ||
      std::chrono::steady_clock::now() - first_outcome_ >=
          std::chrono::duration<double>(options_.max_unmarked_seconds))
    TW_RETURN_IF_ERROR(FlushOutcomes());
  if (a.state == "pending") next_allowed_[c.name] = std::max(next_allowed_[c.name], next);
  if (a.state == "sent" && c.repeat_interval_seconds > 0) repeats_changed_ = true;
  if (a.state == "dead")
    log::Error("notify: channel '" + c.name + "' gave up on " + Describe(a.message_ids) + " after " +
               std::to_string(attempts) + " attempt(s): " + r.detail +
               " (kept as dead in the outbox; see trainwatch status)");
  else if (a.state == "pending")
    log::Warning("notify: channel '" + c.name + "' " + Describe(a.message_ids) + " failed (" + r.detail +
                 "); retrying in " + std::to_string(static_cast<int64_t>(std::ceil(next - now))) + " s");
  out->push_back(std::move(a));
  return Status::Ok();
}

Status Deliverer::QueueRepeats(double now) {
  next_repeat_check_ = INFINITY;
  struct Due {
    const ChannelConfig* channel;
    int64_t finding, last_message, transition;
  };
  std::vector<Due> due;
  for (const auto& ch : channels_) {
    const ChannelConfig& c = ch->config();
    if (c.repeat_interval_seconds <= 0) continue;
    firing_.Reset();
    firing_.Bind(1, c.name);
    for (;;) {
      Result<bool> row = firing_.Step();
      if (!row.ok()) {
        firing_.Reset();
        return row.status();
      }
      if (!*row) break;
      if (firing_.Text(3) == "finding.resolved" || firing_.IsNull(4)) continue;
      const double at = firing_.Real(2) + c.repeat_interval_seconds;
      if (at > now) next_repeat_check_ = std::min(next_repeat_check_, at);
      else due.push_back({&c, firing_.Int(0), firing_.Int(1), firing_.Int(4)});
    }
    firing_.Reset();
  }
  // When nothing else changes: the earliest repeat due. A message sent sets it again (RunOnce),
  // a silenced finding's repeat is looked at again soon (the silence may end), a new
  // Deliverer (a restart, a reload) starts with a look.
  if (due.empty()) return Status::Ok();
  int queued = 0;
  TW_RETURN_IF_ERROR(InTransaction(*db_, [&]() -> Status {
    for (const Due& d : due) {
      Result<Notification> n = LoadNotification(*db_, d.transition, "finding.repeat");
      if (!n.ok()) {
        log::Warning("notify: cannot repeat finding " + std::to_string(d.finding) + ": " + n.status().message());
        continue;
      }
      n->time = now;
      if (!Routes(*d.channel, *n)) continue;
      Result<bool> silenced = Silenced(*db_, n->run, n->rule, now);
      if (!silenced.ok()) return silenced.status();
      if (*silenced) {
        next_repeat_check_ = std::min(next_repeat_check_, now + options_.repeat_check_seconds);
        continue;
      }
      repeat_.Bind(1, d.channel->name)
          .Bind(2, "tw-repeat-" + std::to_string(d.last_message) + "-" + d.channel->name)
          .Bind(3, d.transition).Bind(4, d.finding).Bind(5, std::string("finding.repeat"))
          .Bind(6, ToPayload(*n)).Bind(7, now).Bind(8, now);
      TW_RETURN_IF_ERROR(repeat_.Run());
      queued += static_cast<int>(db_->Changes());
    }
    return Status::Ok();
  }));
  if (queued) log::Info("notify: " + std::to_string(queued) + " repeat(s) queued for findings still firing");
  return Status::Ok();
}

}  // namespace tw::notify

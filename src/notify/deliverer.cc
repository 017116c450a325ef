#include "notify/deliverer.h"

#include <chrono>
#include <cmath>

#include "base/log.h"
#include "notify/http_client.h"
#include "store/migrations.h"

namespace tw::notify {

Deliverer::Deliverer(std::unique_ptr<store::Db> db, store::Stmt head, store::Stmt update,
                     std::vector<std::unique_ptr<Channel>> channels, DeliveryOptions options)
    : db_(std::move(db)), head_(std::move(head)), update_(std::move(update)), channels_(std::move(channels)),
      options_(options),
      rng_(options.seed ? options.seed
                        : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())) {}

Result<std::unique_ptr<Deliverer>> Deliverer::Open(const std::string& db_path,
                                                   std::vector<std::unique_ptr<Channel>> channels,
                                                   DeliveryOptions options) {
  Result<std::unique_ptr<store::Db>> db = store::Db::Open(db_path, store::Db::Mode::kReadWrite);
  if (!db.ok()) return db.status();
  TW_RETURN_IF_ERROR(store::CheckOurs(**db));
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
  Result<store::Stmt> head = (*db)->Prepare(
      "SELECT message_id, idempotency_key, payload, attempts, next_attempt, created FROM outbox "
      "WHERE channel = ? AND state = 'pending' ORDER BY message_id LIMIT 1");
  if (!head.ok()) return head.status();
  Result<store::Stmt> update = (*db)->Prepare(
      "UPDATE outbox SET state = ?2, attempts = ?3, next_attempt = ?4, last_status = ?5, "
      "last_error = ?6, sent_at = CASE WHEN ?2 = 'sent' THEN ?7 ELSE sent_at END WHERE message_id = ?1");
  if (!update.ok()) return update.status();
  return std::unique_ptr<Deliverer>(new Deliverer(std::move(*db), std::move(*head), std::move(*update),
                                                  std::move(channels), options));
}

double Deliverer::Backoff(const DeliveryOptions& o, int64_t attempts) {
  const double d = o.backoff_initial_seconds * std::pow(o.backoff_factor, static_cast<double>(std::max<int64_t>(0, attempts - 1)));
  return std::min(d, o.backoff_max_seconds);
}

Status Deliverer::Record(int64_t id, const SendResult& r, int64_t attempts, double created, double now,
                         Attempt* a) {
  a->result = r;
  double next = now;
  if (r.kind == SendResult::Kind::kSent) {
    a->state = "sent";
  } else if (r.kind == SendResult::Kind::kPermanent) {
    a->state = "dead";
  } else {
    double delay = r.retry_after;
    if (delay < 0) {
      std::uniform_real_distribution<double> jitter(1 - options_.jitter, 1 + options_.jitter);
      delay = Backoff(options_, attempts) * jitter(rng_);
    }
    next = now + delay;
    a->state = next - created > options_.max_age_seconds ? "dead" : "pending";
  }
  a->next_attempt = next;
  store::Stmt& u = update_;
  u.Bind(1, id).Bind(2, a->state).Bind(3, attempts).Bind(4, next);
  if (r.http_status) u.Bind(5, int64_t{r.http_status});
  else u.BindNull(5);
  u.Bind(6, r.kind == SendResult::Kind::kSent ? std::string() : r.detail).Bind(7, now);
  return u.Run();
}

Result<std::vector<Attempt>> Deliverer::RunOnce(double now) {
  std::vector<Attempt> out;
  next_due_ = INFINITY;
  store::Stmt& head = head_;
  for (const auto& ch : channels_) {
    const ChannelConfig& c = ch->config();
    for (int sent = 0; sent < options_.max_per_channel_per_run; ++sent) {
      head.Reset();
      head.Bind(1, c.name);
      Result<bool> row = head.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      const int64_t id = head.Int(0);
      const std::string key = head.Text(1), payload = head.Text(2);
      const int64_t attempts = head.Int(3);
      const double due = std::max(head.Real(4), next_allowed_[c.name]), created = head.Real(5);
      head.Reset();
      if (due > now) {
        next_due_ = std::min(next_due_, due);
        break;
      }
      Attempt a;
      a.message_id = id;
      a.channel = c.name;
      SendResult r;
      Result<Notification> n = FromPayload(payload);
      if (!n.ok()) r = {SendResult::Kind::kPermanent, 0, -1, "unreadable payload: " + n.status().message()};
      else r = ch->Send(*n, key, now);
      next_allowed_[c.name] = now + c.min_interval_seconds;
      TW_RETURN_IF_ERROR(Record(id, r, attempts + 1, created, now, &a));
      if (a.state == "dead")
        log::Error("notify: channel '" + c.name + "' gave up on message " + std::to_string(id) +
                   " after " + std::to_string(attempts + 1) + " attempt(s): " + r.detail +
                   " (kept as dead in the outbox; see trainwatch status)");
      else if (a.state == "pending")
        log::Warning("notify: channel '" + c.name + "' message " + std::to_string(id) + " failed (" +
                     r.detail + "); retrying in " + std::to_string(static_cast<int64_t>(std::ceil(a.next_attempt - now))) + " s");
      out.push_back(std::move(a));
      if (out.back().state == "pending") {
        next_due_ = std::min(next_due_, out.back().next_attempt);
        break;  // later messages wait behind it: order per channel holds
      }
    }
  }
  return out;
}

}  // namespace tw::notify

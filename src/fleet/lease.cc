// Shared roots' leases: an advisory lock plus a heartbeat row (fleet.h, LeaseKeeper).
#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "base/log.h"
#include "fleet/fleet.h"
#include "fleet/pg.h"
#include "fleet/schema.h"
#include "store/store.h"

namespace tw::fleet {

namespace {

double MonoSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The lock's key: one 64-bit number per root path, computed by PostgreSQL.
constexpr const char* kTryLock = "SELECT pg_try_advisory_lock(hashtextextended('trainwatch lease ' || $1, 0))";
constexpr const char* kUnlock = "SELECT pg_advisory_unlock(hashtextextended('trainwatch lease ' || $1, 0))";
constexpr const char* kNow = "extract(epoch from clock_timestamp())";

}  // namespace

LeaseKeeper::LeaseKeeper(std::string db_path, FleetOptions options)
    : db_path_(std::move(db_path)), options_(std::move(options)) {}

LeaseKeeper::~LeaseKeeper() { Stop(); }

void LeaseKeeper::Start(std::function<void()> on_change) {
  on_change_ = std::move(on_change);
  thread_ = std::thread([this] { Loop(); });
}

void LeaseKeeper::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  pg_.reset();  // the session's advisory locks go with it
}

std::vector<std::string> LeaseKeeper::Owned() const {
  std::lock_guard<std::mutex> l(mu_);
  return owned_;
}

std::string LeaseKeeper::Describe() const {
  std::lock_guard<std::mutex> l(mu_);
  return described_;
}

void LeaseKeeper::Loop() {
  const auto period = std::chrono::milliseconds(static_cast<int64_t>(options_.lease_seconds * 1000 / 4));
  for (;;) {
    Tick();
    std::unique_lock<std::mutex> l(mu_);
    if (cv_.wait_for(l, period, [&] { return stop_; })) return;
  }
}

void LeaseKeeper::Tick() {
  const double now = MonoSeconds();
  if (pg_ && !pg_->ok()) pg_.reset();
  if (!pg_) {
    locked_.clear();  // a new session holds no lock
    Result<std::unique_ptr<Pg>> pg = Pg::Connect(options_.conninfo, options_.password, "trainwatch lease " + options_.host);
    Status st = pg.ok() ? Migrate(**pg) : pg.status();
    if (st.ok()) {
      pg_ = std::move(*pg);
      if (!error_.empty()) log::Info("fleet: leases: PostgreSQL reachable again");
      error_.clear();
    } else if (st.message() != error_) {
      error_ = st.message();
      log::Warning("fleet: leases: " + error_ + "; shared roots held now are let go within " +
                   std::to_string(static_cast<int64_t>(options_.lease_seconds / 2)) + " s");
    }
  }
  for (const std::string& root : options_.shared_roots) {
    if (!pg_) break;
    if (locked_[root]) {
      Result<PgRows> r = pg_->Query(std::string("UPDATE leases SET heartbeat = ") + kNow +
                                        ", ttl = $3 WHERE root = $1 AND host = $2",
                                    {root, options_.host, std::to_string(options_.lease_seconds)});
      if (r.ok() && r->affected == 1) {
        renewed_[root] = now;
      } else if (r.ok()) {  // the row names another host: it is theirs (never expected)
        (void)pg_->Query(kUnlock, {root});
        locked_[root] = false;
        renewed_.erase(root);
      }
      continue;
    }
    Result<PgRows> row = pg_->Query(std::string("SELECT host, ") + kNow + " - heartbeat > ttl FROM leases WHERE root = $1",
                                    {root});
    if (!row.ok()) continue;
    const bool exists = !row->rows.empty();
    const std::string holder = exists ? row->rows[0][0].value_or("") : "";
    const bool lapsed = exists && row->rows[0][1].value_or("f") == "t";
    if (exists && holder != options_.host && !lapsed) {
      holder_[root] = holder;  // alive (its heartbeat is fresh), or not yet lapsed
      continue;
    }
    Result<PgRows> got = pg_->Query(kTryLock, {root});
    if (!got.ok() || got->rows.empty() || got->rows[0][0].value_or("f") != "t") {
      holder_[root] = exists ? holder : "another host";  // its session still holds the lock
      continue;
    }
    // Ours now. Another host's findings first, then the heartbeat row: the root is not read
    // here before they are in the local store.
    if (exists && holder != options_.host) {
      if (Status st = Adopt(root); !st.ok()) {
        log::Warning("fleet: shared root " + root + ": cannot copy " + holder + "'s findings: " + st.message() +
                     "; not taking it yet");
        (void)pg_->Query(kUnlock, {root});
        continue;
      }
    }
    Result<PgRows> up = pg_->Query(
        std::string("INSERT INTO leases(root, host, acquired, heartbeat, ttl) VALUES ($1, $2, ") + kNow + ", " + kNow +
            ", $3) ON CONFLICT (root) DO UPDATE SET host = EXCLUDED.host, heartbeat = EXCLUDED.heartbeat, "
            "ttl = EXCLUDED.ttl, acquired = CASE WHEN leases.host = EXCLUDED.host THEN leases.acquired "
            "ELSE EXCLUDED.acquired END",
        {root, options_.host, std::to_string(options_.lease_seconds)});
    if (!up.ok()) {
      (void)pg_->Query(kUnlock, {root});
      continue;
    }
    locked_[root] = true;
    renewed_[root] = now;
    holder_.erase(root);
    log::Info("fleet: shared root " + root + ": this host holds its lease now" +
              (exists && holder != options_.host ? " (taken over from " + holder + ", whose lease lapsed)" : ""));
  }
  // Held: renewed within half a lease (the rest of it is the margin before anyone may take it).
  std::vector<std::string> owned;
  std::string described;
  for (const std::string& root : options_.shared_roots) {
    auto it = renewed_.find(root);
    const bool held = it != renewed_.end() && now - it->second < options_.lease_seconds / 2;
    if (held) owned.push_back(root);
    else if (it != renewed_.end()) {
      log::Warning("fleet: shared root " + root + ": lease not renewed for " +
                   std::to_string(static_cast<int64_t>(now - it->second)) + " s; letting it go");
      renewed_.erase(it);
      locked_[root] = false;
    }
    described += root + (held ? ": held by this host"
                              : ": skipped, held by " + (holder_.count(root) ? holder_[root] : std::string("nobody yet"))) +
                 "\n";
  }
  bool changed = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    changed = owned != owned_ || described != described_;
    owned_ = std::move(owned);
    described_ = std::move(described);
  }
  if (changed && on_change_) on_change_();
}

// The findings other hosts recorded on this root's runs, into the local store as they stand
// (with their runs and series, which ingest will find by name), unless the local store has its
// own already. None of them gets a transition: nothing is announced, and nothing is shipped.
Status LeaseKeeper::Adopt(const std::string& root) {
  Result<PgRows> rows = pg_->Query(
      "SELECT r.name, COALESCE(s.tag, ''), COALESCE(s.kind, ''), COALESCE(s.plugin, ''), COALESCE(s.data_class, 0), "
      "f.rule, f.severity, f.state, f.first_seen, f.last_seen, f.fired_at, f.resolved_at, f.onset_step, "
      "f.first_step, f.last_step, f.message, f.cause, f.fix, f.evidence "
      "FROM findings f JOIN runs r ON r.host = f.host AND r.run_id = f.run_id "
      "LEFT JOIN series s ON s.host = f.host AND s.series_id = f.series_id "
      "WHERE f.host <> $1 AND r.root = $2 ORDER BY f.last_seen",
      {options_.host, root});
  if (!rows.ok()) return rows.status();
  if (rows->rows.empty()) return Status::Ok();
  Result<std::unique_ptr<store::Store>> st = store::Store::Open(db_path_);
  if (!st.ok()) return st.status();
  store::Store& s = **st;
  TW_RETURN_IF_ERROR(s.Begin());
  Result<store::Stmt> ins = s.db().Prepare(
      "INSERT INTO findings(rule, run_id, series_id, severity, state, first_seen, last_seen, fired_at, "
      "resolved_at, onset_step, first_step, last_step, message, cause, fix, evidence) "
      "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16 "
      "WHERE NOT EXISTS (SELECT 1 FROM findings WHERE rule = ?1 AND run_id = ?2 AND series_id = ?3)");
  if (!ins.ok()) {
    s.Rollback();
    return ins.status();
  }
  auto text = [](const std::optional<std::string>& v) { return v.value_or(""); };
  auto bind_num = [&](int i, const std::optional<std::string>& v, bool integer) {
    if (!v) ins->BindNull(i);
    else if (integer) ins->Bind(i, static_cast<int64_t>(std::strtoll(v->c_str(), nullptr, 10)));
    else ins->Bind(i, std::strtod(v->c_str(), nullptr));
  };
  for (const auto& r : rows->rows) {
    Result<int64_t> run = s.EnsureRun(root, text(r[0]));
    if (!run.ok()) {
      s.Rollback();
      return run.status();
    }
    int64_t series = 0;
    if (!text(r[1]).empty()) {
      Result<int64_t> id = s.EnsureSeries(*run, text(r[1]), text(r[2]), text(r[3]),
                                          static_cast<int32_t>(std::atoi(text(r[4]).c_str())));
      if (!id.ok()) {
        s.Rollback();
        return id.status();
      }
      series = *id;
    }
    ins->Bind(1, text(r[5])).Bind(2, *run).Bind(3, series).Bind(4, text(r[6])).Bind(5, text(r[7]));
    bind_num(6, r[8], false);
    bind_num(7, r[9], false);
    bind_num(8, r[10], false);
    bind_num(9, r[11], false);
    bind_num(10, r[12], true);
    bind_num(11, r[13], true);
    bind_num(12, r[14], true);
    ins->Bind(13, text(r[15])).Bind(14, text(r[16])).Bind(15, text(r[17])).Bind(16, text(r[18]));
    if (Status e = ins->Run(); !e.ok()) {
      s.Rollback();
      return e;
    }
  }
  TW_RETURN_IF_ERROR(s.Commit());
  log::Info("fleet: shared root " + root + ": " + std::to_string(rows->rows.size()) +
            " findings of other hosts copied (not announced again)");
  return Status::Ok();
}

}  // namespace tw::fleet

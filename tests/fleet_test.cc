// The fleet store against a real PostgreSQL (tests/support/postgres_server.h): the shipper in
// process, then daemons as real processes shipping at once, killed with -9 mid-ship, and with
// PostgreSQL stopped and started under them. In every case the per-(host, run, tag) counts in
// PostgreSQL (live and superseded apart) must equal each host's SQLite store.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fleet/fleet.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/daemon_process.h"
#include "support/event_writer.h"
#include "support/postgres_server.h"
#include "support/store_dump.h"
#include "support/test_env.h"

namespace tw {
namespace {

using namespace tw::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr double kWall0 = 1.7e9;

// "run|tag|superseded|count" per series of a host, as each side sees it.
std::vector<std::string> LocalCounts(const std::string& db) {
  auto rows = QueryRows(db,
                        "SELECT r.name || '|' || s.tag || '|' || p.superseded || '|' || count(*) FROM scalars p "
                        "JOIN series s USING (series_id) JOIN runs r USING (run_id) GROUP BY r.name, s.tag, "
                        "p.superseded ORDER BY 1");
  return rows ? *rows : std::vector<std::string>{"<unreadable>"};
}

std::vector<std::string> FleetCounts(const PostgresServer& pg, const std::string& db, const std::string& host) {
  try {
    return pg.Query("SELECT r.name || '|' || s.tag || '|' || p.superseded || '|' || count(*) FROM scalars p "
                    "JOIN series s USING (host, series_id) JOIN runs r ON r.host = s.host AND r.run_id = s.run_id "
                    "WHERE p.host = '" + host + "' GROUP BY r.name, s.tag, p.superseded ORDER BY 1",
                    db);
  } catch (const std::exception& e) {
    return {std::string("<") + e.what() + ">"};
  }
}

int64_t LocalPoints(const std::string& db) {
  auto n = QueryInt(db, "SELECT count(*) FROM scalars");
  return n;
}

// A run's scalars: `steps` points of train/loss and lr from `first`, wall times from `wall`.
void AddPoints(EventFileWriter& w, int64_t first, int64_t steps, double wall) {
  for (int64_t s = first; s < first + steps; ++s) {
    w.Add(SimpleScalarEvent("train/loss", s, wall + static_cast<double>(s - first), 1.0f / static_cast<float>(s + 1)));
    w.Add(SimpleScalarEvent("lr", s, wall + static_cast<double>(s - first), 0.001f));
  }
}

fleet::FleetOptions Options(const PostgresServer& pg, const std::string& db, const std::string& host) {
  fleet::FleetOptions o;
  o.conninfo = pg.conninfo(db);
  o.host = host;
  return o;
}

// ---------------------------------------------------------------------------------------------
// The shipper in process

// Everything a store holds reaches PostgreSQL once: runs, series, hparams, points of every kind
// (NaN and infinities as they were), and a restart's superseded points marked there too. A
// second pass ships nothing new; a pass after the marks are lost (a crash before they were
// written) doubles nothing.
TEST(Fleet, ShipsAStoreExactlyOnce) {
  TW_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("one");
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "store.db";
  EventFileWriter w(root + "/exp1/" + EventFileName(1700000000, "gpu1", 1, 0));
  w.Add(FileVersionEvent(kWall0));
  w.Add(HParamsStartEvent(kWall0, {{"lr", 0.001}, {"optimizer", std::string("adam")}}, false));
  AddPoints(w, 0, 100, kWall0);
  w.Add(SimpleScalarEvent("train/loss", 100, kWall0 + 100, std::nanf("")));
  w.Add(SimpleScalarEvent("train/loss", 101, kWall0 + 101, INFINITY));
  w.Add(HistogramEvent("weights", 5, kWall0 + 5, {0.1, 0.2, 0.3}, {0.0, 0.5, 1e300}));
  w.Add(TextEvent("notes", 1, kWall0 + 1, {"tab\there, newline\nthere, back\\slash"}));
  w.Flush();
  auto store = store::Store::Open(db);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ingest::Summary summary;
  ASSERT_TRUE(ingest::IngestPaths(**store, {root}, {}, &summary).ok());

  fleet::Shipper shipper(db, Options(pg, "one", "alpha"));
  Result<fleet::PassStats> pass = shipper.ShipOnce();
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_TRUE(pass->complete);
  EXPECT_EQ(FleetCounts(pg, "one", "alpha"), LocalCounts(db));
  EXPECT_EQ(pg.Query("SELECT value_class, value FROM scalar_points WHERE step >= 100 AND tag = 'train/loss' "
                     "ORDER BY step", "one"),
            (std::vector<std::string>{"nan|\\N", "+inf|Infinity"}));
  EXPECT_EQ(pg.Query("SELECT text FROM text_points", "one"), QueryRows(db, "SELECT text FROM text_points").value());
  EXPECT_NE(pg.Query("SELECT text FROM text_points", "one").at(0).find("tab\there, newline\nthere, back\\slash"),
            std::string::npos);
  EXPECT_EQ(pg.Query("SELECT count::bigint, length(buckets) FROM histogram_points", "one"),
            QueryRows(db, "SELECT CAST(count AS INTEGER), length(buckets) FROM histogram_points").value());
  EXPECT_EQ(pg.Query("SELECT key, value FROM run_hparams ORDER BY key", "one"),
            (std::vector<std::string>{"lr|0.001", "optimizer|adam"}));

  // A restart: steps 50.. logged again, later. The first 50..101 become superseded locally.
  AddPoints(w, 50, 100, kWall0 + 1000);
  w.Flush();
  ASSERT_TRUE(ingest::IngestPaths(**store, {root}, {}, &summary).ok());
  ASSERT_GT(QueryInt(db, "SELECT count(*) FROM scalars WHERE superseded = 1"), 0);
  pass = shipper.ShipOnce();
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_GE(pass->superseded, 1);
  EXPECT_EQ(FleetCounts(pg, "one", "alpha"), LocalCounts(db));
  EXPECT_EQ(pg.Query("SELECT count(*) FROM scalar_points", "one"),
            QueryRows(db, "SELECT count(*) FROM scalar_points").value());

  // Nothing new: nothing sent.
  pass = shipper.ShipOnce();
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->rows, 0);

  // The marks lost (as if the daemon died after PostgreSQL committed, before they were
  // written): everything is sent again, and nothing is doubled.
  ASSERT_TRUE((*store)->db().Exec("DELETE FROM fleet_shipped; DELETE FROM fleet_marks").ok());
  pass = shipper.ShipOnce();
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_GT(pass->rows, 400);
  EXPECT_EQ(FleetCounts(pg, "one", "alpha"), LocalCounts(db));
  EXPECT_EQ(pg.Query("SELECT count(*) FROM scalars", "one"), QueryRows(db, "SELECT count(*) FROM scalars").value());
}

// Findings go with their transitions (a state change updates the row), run events once; and
// every query of the Grafana dashboard (contrib/grafana) runs against the fleet schema.
TEST(Fleet, FindingsEventsAndTheGrafanaDashboardsQueries) {
  TW_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("graf");
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "store.db";
  EventFileWriter w(root + "/exp/" + EventFileName(1700000000, "gpu1", 1, 0));
  w.Add(FileVersionEvent(kWall0));
  AddPoints(w, 0, 20, kWall0);
  w.Flush();
  auto store = store::Store::Open(db);
  ASSERT_TRUE(store.ok());
  ingest::Summary summary;
  ASSERT_TRUE(ingest::IngestPaths(**store, {root}, {}, &summary).ok());
  // A finding as the diagnosis thread writes one: a row and its transition.
  ASSERT_TRUE((*store)->db().Exec(
      "INSERT INTO findings(finding_id, rule, run_id, series_id, severity, state, first_seen, last_seen, fired_at, "
      "onset_step, message) VALUES (7, 'nan_loss', 1, 1, 'critical', 'firing', 1.7e9, 1.7e9, 1.7e9 + 5, 12, "
      "'loss is NaN from step 12');"
      "INSERT INTO finding_transitions(finding_id, time, from_state, to_state, severity, message) "
      "VALUES (7, 1.7e9 + 5, 'pending', 'firing', 'critical', 'loss is NaN from step 12');"
      "INSERT INTO run_lifecycle(run_id, kind, cause_key, time, how, announced, title, message) "
      "VALUES (1, 'finished', 'end:1', 1.7e9 + 30, 'SessionLog STOP', 1, 'Run finished', 'done')").ok());
  fleet::Shipper shipper(db, Options(pg, "graf", "alpha"));
  ASSERT_TRUE(shipper.ShipOnce().ok());
  EXPECT_EQ(pg.Query("SELECT host, run, rule, state, onset_step FROM finding_list", "graf"),
            (std::vector<std::string>{"alpha|exp|nan_loss|firing|12"}));
  ASSERT_TRUE((*store)->db().Exec(
      "UPDATE findings SET state = 'resolved', resolved_at = 1.7e9 + 60 WHERE finding_id = 7;"
      "INSERT INTO finding_transitions(finding_id, time, from_state, to_state, severity, message) "
      "VALUES (7, 1.7e9 + 60, 'firing', 'resolved', 'critical', 'recovered')").ok());
  ASSERT_TRUE(shipper.ShipOnce().ok());
  EXPECT_EQ(pg.Query("SELECT state FROM finding_list", "graf"), (std::vector<std::string>{"resolved"}));
  EXPECT_EQ(pg.Query("SELECT count(*) FROM finding_transitions", "graf"), (std::vector<std::string>{"2"}));
  EXPECT_EQ(pg.Query("SELECT kind, title FROM run_lifecycle", "graf"), (std::vector<std::string>{"finished|Run finished"}));

  // Every SQL text of the dashboard, Grafana's macros and variables replaced as Grafana would.
  const std::string text = ReadFile(std::string(TW_DOCS_DIR) + "/../contrib/grafana/trainwatch-fleet.json");
  boost::json::value dash = boost::json::parse(text);
  std::vector<std::string> sqls;
  std::function<void(const boost::json::value&)> walk = [&](const boost::json::value& v) {
    if (v.is_object()) {
      for (const auto& [k, x] : v.as_object()) {
        if ((k == "rawSql" || k == "definition") && x.is_string()) sqls.emplace_back(x.as_string());
        walk(x);
      }
    } else if (v.is_array()) {
      for (const auto& x : v.as_array()) walk(x);
    }
  };
  walk(dash);
  ASSERT_GE(sqls.size(), 7u);
  auto replace = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t at; (at = s.find(from)) != std::string::npos;) s.replace(at, from.size(), to);
    return s;
  };
  size_t with_rows = 0;
  for (std::string sql : sqls) {
    sql = replace(sql, "$__timeFilter(time)", "time BETWEEN to_timestamp(0) AND now()");
    sql = replace(sql, "($host)", "('alpha')");
    sql = replace(sql, "$tag", "train/loss");
    std::vector<std::string> rows;
    EXPECT_NO_THROW(rows = pg.Query(sql, "graf")) << sql;
    if (!rows.empty()) ++with_rows;
  }
  EXPECT_EQ(with_rows, sqls.size() - 1);  // all but "Findings firing" (resolved by now)
}

// PostgreSQL down: the pass fails, nothing is marked shipped; up again: all of it arrives.
TEST(Fleet, AnOutageLeavesTheBacklogLocal) {
  TW_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("out");
  TempDir dir;
  const std::string root = dir / "logs", db = dir / "store.db";
  EventFileWriter w(root + "/run/" + EventFileName(1700000000, "gpu1", 1, 0));
  w.Add(FileVersionEvent(kWall0));
  AddPoints(w, 0, 50, kWall0);
  w.Flush();
  auto store = store::Store::Open(db);
  ASSERT_TRUE(store.ok());
  ingest::Summary summary;
  ASSERT_TRUE(ingest::IngestPaths(**store, {root}, {}, &summary).ok());
  fleet::Shipper shipper(db, Options(pg, "out", "alpha"));
  ASSERT_TRUE(shipper.ShipOnce().ok());

  pg.Stop();
  AddPoints(w, 50, 50, kWall0 + 50);
  w.Flush();
  ASSERT_TRUE(ingest::IngestPaths(**store, {root}, {}, &summary).ok());
  Result<fleet::PassStats> pass = shipper.ShipOnce();
  EXPECT_FALSE(pass.ok());
  Result<fleet::Lag> lag = fleet::ReadLag(db);
  ASSERT_TRUE(lag.ok());
  EXPECT_EQ(lag->sources, 1);
  EXPECT_GT(lag->bytes, 0);

  pg.Start();
  pass = shipper.ShipOnce();
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(FleetCounts(pg, "out", "alpha"), LocalCounts(db));
  EXPECT_EQ(fleet::ReadLag(db)->sources, 0);
}

// ---------------------------------------------------------------------------------------------
// Daemons

struct Host {
  std::string name, root, db, config, log;
};

Host MakeHost(const TempDir& dir, const std::string& name, const PostgresServer& pg, const std::string& pgdb,
              const std::string& extra = "") {
  Host h{name, dir / (name + "-logs"), dir / (name + ".db"), dir / (name + ".toml"), dir / (name + ".log")};
  fs::create_directories(h.root);
  WriteFile(h.config, "[fleet]\npostgres = \"" + pg.conninfo(pgdb) + "\"\nhost = \"" + name +
                          "\"\ninterval_seconds = 0.2\n" + extra);
  ::chmod(h.config.c_str(), 0600);
  return h;
}

std::vector<std::string> DaemonArgs(const Host& h) {
  return {"--config", h.config, "--logdir", h.root, "--db", h.db, "--rescan-interval", "0.3"};
}

// PostgreSQL holds exactly what the host's store holds, and the store holds `points`.
bool Converged(const PostgresServer& pg, const std::string& pgdb, const Host& h, int64_t points) {
  return LocalPoints(h.db) == points && FleetCounts(pg, pgdb, h.name) == LocalCounts(h.db);
}

std::string Diff(const PostgresServer& pg, const std::string& pgdb, const Host& h) {
  std::string out = "\nlocal (" + h.name + "):";
  for (const auto& l : LocalCounts(h.db)) out += "\n  " + l;
  out += "\nPostgreSQL:";
  for (const auto& l : FleetCounts(pg, pgdb, h.name)) out += "\n  " + l;
  return out;
}

// Two hosts, two logdirs, one PostgreSQL, both daemons writing and shipping at once (the
// schema created by whichever connects first).
TEST(FleetDaemon, TwoHostsShipAtOnce) {
  TW_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("two");
  TempDir dir;
  Host a = MakeHost(dir, "alpha", pg, "two"), b = MakeHost(dir, "beta", pg, "two");
  DaemonProcess da(DaemonArgs(a), a.log), db(DaemonArgs(b), b.log);
  std::vector<std::unique_ptr<EventFileWriter>> writers;
  for (const Host* h : {&a, &b})
    for (int r = 0; r < 3; ++r) {
      writers.push_back(std::make_unique<EventFileWriter>(h->root + "/run" + std::to_string(r) + "/" +
                                                          EventFileName(1700000000, h->name, 1, 0)));
      writers.back()->Add(FileVersionEvent(kWall0));
    }
  // Points arrive while both ship: 10 appends of 100 steps (200 points) to every run.
  for (int k = 0; k < 10; ++k) {
    for (auto& w : writers) {
      AddPoints(*w, k * 100, 100, kWall0 + k * 100);
      w->Flush();
    }
    std::this_thread::sleep_for(100ms);
  }
  for (const Host* h : {&a, &b})
    ASSERT_TRUE(WaitFor([&] { return Converged(pg, "two", *h, 3 * 2000); }, 60s))
        << Diff(pg, "two", *h) << "\n" << da.Log() << db.Log();
  EXPECT_EQ(pg.Query("SELECT host, count(*) FROM runs GROUP BY host ORDER BY host", "two"),
            (std::vector<std::string>{"alpha|3", "beta|3"}));
  EXPECT_EQ(pg.Query("SELECT value FROM fleet_meta", "two"), (std::vector<std::string>{"1"}));
  // `status` says the lag.
  EXPECT_TRUE(WaitFor([&] { return QueryRows(a.db, "SELECT value FROM daemon_state WHERE key = 'fleet'")
                                       .value_or(std::vector<std::string>{""})
                                       .at(0)
                                       .find("0 files (0 bytes) not shipped") != std::string::npos; },
                      10s));
  // `trainwatch fleet status`: both hosts, their heartbeat, no lag, their roots; `status`: the fleet line.
  std::string out;
  ASSERT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " fleet status --postgres " + ShellQuote(pg.conninfo("two")), &out),
            0) << out;
  EXPECT_NE(out.find("(schema version 1, 2 hosts)"), std::string::npos) << out;
  EXPECT_NE(out.find("host:        alpha: heartbeat "), std::string::npos) << out;
  EXPECT_NE(out.find("; lag 0 files (0 B)"), std::string::npos) << out;
  EXPECT_NE(out.find("  root:      " + fs::canonical(b.root).native()), std::string::npos) << out;
  ASSERT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " fleet status --json --config " + ShellQuote(a.config), &out), 0)
      << out;
  EXPECT_NE(out.find("{\"schema_version\":1,\"hosts\":[{\"host\":\"alpha\""), std::string::npos) << out;
  ASSERT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " status --db " + ShellQuote(a.db), &out), 0) << out;
  EXPECT_NE(out.find("fleet:       shipping to host="), std::string::npos) << out;
  EXPECT_EQ(da.Stop(5s), std::optional<int>(0));
  EXPECT_EQ(db.Stop(5s), std::optional<int>(0));
  // PostgreSQL out of reach: the command says so, exit 1.
  EXPECT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " fleet status --postgres " +
                           ShellQuote("host=" + (dir / "nowhere") + " dbname=x") + " 2>&1", &out),
            1) << out;
  EXPECT_NE(out.find("cannot connect"), std::string::npos) << out;
}

// kill -9 while a backlog ships in small batches (200 rows a commit: hundreds of commits, each
// a moment PostgreSQL holds a batch the local marks do not know yet), eight times, each kill
// once PostgreSQL has taken part of the backlog; more points and a restart (superseded points)
// between kills; then a run to completion: nothing lost, nothing doubled, superseded alike.
TEST(FleetDaemon, KillNineMidShipLosesAndDoublesNothing) {
  TW_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("kill");
  TempDir dir;
  Host h = MakeHost(dir, "gamma", pg, "kill", "batch_rows = 200\n");
  constexpr int kRuns = 8;
  std::vector<std::unique_ptr<EventFileWriter>> writers;
  std::vector<int64_t> next(kRuns, 1000);
  int64_t want = 0;
  double wall = kWall0 + 10000;
  for (int r = 0; r < kRuns; ++r) {
    writers.push_back(std::make_unique<EventFileWriter>(h.root + "/run" + std::to_string(r) + "/" +
                                                        EventFileName(1700000000, "gamma", 1, 0)));
    writers.back()->Add(FileVersionEvent(kWall0));
    AddPoints(*writers.back(), 0, 1000, kWall0);
    writers.back()->Flush();
    want += 2000;
  }
  auto shipped = [&] {
    try {
      return static_cast<int64_t>(std::stoll(pg.Query("SELECT count(*) FROM scalars", "kill").at(0)));
    } catch (const std::exception&) {
      return int64_t{0};  // the schema not created yet
    }
  };
  int killed_mid_ship = 0;
  for (int i = 0; i < 8; ++i) {
    const int64_t before = shipped();
    DaemonProcess d(DaemonArgs(h), h.log);
    // Shipping under way: PostgreSQL has some of the new rows.
    EXPECT_TRUE(WaitFor([&] { return shipped() > before + 100; }, 30s, 2ms)) << "iteration " << i << d.Log();
    const int status = d.KillAndReap();
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "iteration " << i << d.Log();
    Result<fleet::Lag> lag = fleet::ReadLag(h.db);
    if (lag.ok() && lag->sources > 0) ++killed_mid_ship;
    // More points in every run, and a restart in one (its last 200 steps logged again, later).
    for (int r = 0; r < kRuns; ++r) {
      AddPoints(*writers[r], next[r], 250, wall);
      next[r] += 250;
      wall += 250;
      want += 500;
    }
    AddPoints(*writers[i], next[i] - 200, 300, wall);
    next[i] += 100;
    wall += 300;
    want += 600;
    for (auto& w : writers) w->Flush();
  }
  EXPECT_GE(killed_mid_ship, 6) << "the kills should land while shipping";
  DaemonProcess d(DaemonArgs(h), h.log);
  ASSERT_TRUE(WaitFor([&] { return Converged(pg, "kill", h, want) && fleet::ReadLag(h.db)->sources == 0; }, 120s))
      << Diff(pg, "kill", h) << d.Log();
  // Superseded points are superseded there too, and every point is there exactly once.
  EXPECT_GT(QueryInt(h.db, "SELECT count(*) FROM scalars WHERE superseded = 1"), 0);
  EXPECT_EQ(pg.Query("SELECT count(*) FROM scalars", "kill"), (std::vector<std::string>{std::to_string(want)}));
  EXPECT_EQ(d.Stop(5s), std::optional<int>(0));
}

// PostgreSQL stopped while points arrive, and started again: the daemon keeps ingesting (and
// says it waits), then catches up; the password given never appears in its log.
TEST(FleetDaemon, PostgresRestartDuringIngest) {
  TW_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("restart");
  TempDir dir;
  WriteFile(dir / "pw", "s3cret-Pa55word\n");
  ::chmod((dir / "pw").c_str(), 0600);
  Host h = MakeHost(dir, "delta", pg, "restart", "password_file = \"" + (dir / "pw") + "\"\n");
  DaemonProcess d(DaemonArgs(h), h.log);
  EventFileWriter w(h.root + "/run/" + EventFileName(1700000000, "delta", 1, 0));
  w.Add(FileVersionEvent(kWall0));
  AddPoints(w, 0, 500, kWall0);
  w.Flush();
  ASSERT_TRUE(WaitFor([&] { return Converged(pg, "restart", h, 1000); }, 30s)) << Diff(pg, "restart", h) << d.Log();

  pg.Stop();
  for (int k = 1; k <= 5; ++k) {
    AddPoints(w, k * 500, 500, kWall0 + k * 500);
    w.Flush();
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(WaitFor([&] { return LocalPoints(h.db) == 6000; }, 30s)) << d.Log();
  ASSERT_TRUE(d.WaitForLog("the backlog stays in the local store", 20s)) << d.Log();
  const std::string status = QueryRows(h.db, "SELECT value FROM daemon_state WHERE key = 'fleet'").value().at(0);
  EXPECT_NE(status.find("waiting:"), std::string::npos) << status;

  pg.Start();
  ASSERT_TRUE(WaitFor([&] { return Converged(pg, "restart", h, 6000); }, 60s)) << Diff(pg, "restart", h) << d.Log();
  EXPECT_TRUE(d.WaitForLog("fleet: shipping again", 10s)) << d.Log();
  EXPECT_EQ(d.Stop(5s), std::optional<int>(0));
  EXPECT_EQ(d.Log().find("s3cret-Pa55word"), std::string::npos) << d.Log();
  EXPECT_EQ(QueryRows(h.db, "SELECT value FROM daemon_state WHERE value LIKE '%s3cret%'").value().size(), 0u);
}

// A shared root (one directory both hosts mount): only the lease holder reads and diagnoses
// it; the other skips it and says so. The holder killed with -9, the other takes the root over
// once the lease lapses, reads it from the start into its own store, and announces nothing the
// first holder had announced: one finding in PostgreSQL, one notification in all.
TEST(FleetDaemon, SharedRootTakenOverWhenItsOwnerDies) {
  TW_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("shared");
  TempDir dir;
  fs::create_directories(dir / "shared");
  const std::string shared = fs::canonical(dir / "shared").native();
  const std::string extra = "shared_roots = [\"" + shared + "\"]\nlease_seconds = 2\n[rules]\ninterval_seconds = 0.3\n";
  Host a = MakeHost(dir, "alpha", pg, "shared", extra), b = MakeHost(dir, "beta", pg, "shared", extra);
  // A run on the shared root whose loss turns NaN at step 300.
  EventFileWriter w(shared + "/sick/" + EventFileName(1700000000, "trainer", 1, 0));
  w.Add(FileVersionEvent(kWall0));
  for (int64_t s = 0; s < 340; ++s)
    w.Add(SimpleScalarEvent("Loss/train", s, kWall0 + s, s < 300 ? 2.0f / static_cast<float>(1 + s / 50) : NAN));
  w.Flush();
  const std::string firing = "SELECT count(*) FROM findings WHERE rule = 'non_finite_loss' AND state = 'firing'";
  const std::string in_pg = "SELECT host FROM finding_list WHERE rule = 'non_finite_loss' ORDER BY host";

  auto da = std::make_unique<DaemonProcess>(DaemonArgs(a), a.log);
  ASSERT_TRUE(WaitFor([&] { return QueryInt(a.db, firing) == 1; }, 30s)) << da->Log();
  ASSERT_TRUE(WaitFor([&] { return pg.Query(in_pg, "shared") == std::vector<std::string>{"alpha"}; }, 15s))
      << da->Log();
  DaemonProcess db(DaemonArgs(b), b.log);
  // beta skips the root, and says so.
  ASSERT_TRUE(WaitFor([&] {
    auto v = QueryRows(b.db, "SELECT value FROM daemon_state WHERE key = 'shared_roots'");
    return v && !v->empty() && (*v)[0].find(shared + ": skipped, held by alpha") != std::string::npos;
  }, 15s)) << db.Log();
  std::this_thread::sleep_for(2s);  // a lease and more: still alpha's
  EXPECT_EQ(QueryInt(b.db, "SELECT count(*) FROM runs WHERE root = '" + shared + "'"), 0) << db.Log();
  EXPECT_EQ(pg.Query("SELECT host FROM leases", "shared"), std::vector<std::string>{"alpha"});

  const int status = da->KillAndReap();
  ASSERT_TRUE(WIFSIGNALED(status));
  w.Add(SimpleScalarEvent("Loss/train", 340, kWall0 + 340, NAN));
  w.Flush();
  ASSERT_TRUE(WaitFor([&] { return pg.Query("SELECT host FROM leases", "shared") == std::vector<std::string>{"beta"}; },
                      20s)) << db.Log();
  ASSERT_TRUE(WaitFor([&] { return QueryInt(b.db, "SELECT count(*) FROM scalars") == 341; }, 20s)) << db.Log();
  ASSERT_TRUE(WaitFor([&] { return Converged(pg, "shared", b, 341); }, 20s)) << Diff(pg, "shared", b) << db.Log();
  EXPECT_TRUE(db.WaitForLog("taken over from alpha", 1s)) << db.Log();
  // beta's diagnosis ran over the run (the finding is current there) and announced nothing.
  ASSERT_TRUE(WaitFor([&] { return QueryInt(b.db, "SELECT last_step FROM findings WHERE rule = 'non_finite_loss'") == 340; },
                      20s)) << db.Log();
  EXPECT_EQ(QueryInt(b.db, firing), 1);
  EXPECT_EQ(QueryInt(b.db, "SELECT count(*) FROM outbox WHERE event LIKE 'finding.%'"), 0) << db.Log();
  EXPECT_GE(QueryInt(a.db, "SELECT count(*) FROM outbox WHERE event = 'finding.firing'"), 1);
  std::this_thread::sleep_for(1s);  // a few more shipping passes
  EXPECT_EQ(pg.Query(in_pg, "shared"), std::vector<std::string>{"alpha"});
  std::string out;
  ASSERT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " status --db " + ShellQuote(b.db), &out), 0) << out;
  EXPECT_NE(out.find("shared root: " + shared + ": held by this host"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(std::string(TW_CLI_BINARY) + " fleet status --postgres " + ShellQuote(pg.conninfo("shared")), &out),
            0) << out;
  EXPECT_NE(out.find("  owns:      " + shared + " (shared)"), std::string::npos) << out;
  EXPECT_EQ(db.Stop(5s), std::optional<int>(0));
}

// SIGHUP: a [fleet] change takes a restart (said, and the daemon ships on as before); a change
// of the roots alone is no [fleet] change.
TEST(FleetDaemon, AReloadKeepsShippingAsStarted) {
  TW_REQUIRE_POSTGRES();
  PostgresServer pg;
  pg.CreateDatabase("reload");
  TempDir dir;
  Host h = MakeHost(dir, "zeta", pg, "reload");
  DaemonProcess d(DaemonArgs(h), h.log);
  EventFileWriter w(h.root + "/run/" + EventFileName(1700000000, "zeta", 1, 0));
  w.Add(FileVersionEvent(kWall0));
  AddPoints(w, 0, 10, kWall0);
  w.Flush();
  ASSERT_TRUE(WaitFor([&] { return Converged(pg, "reload", h, 20); }, 20s)) << d.Log();
  fs::create_directories(dir / "more");
  WriteFile(h.config, ReadFile(h.config) + "[watch]\nroots = [\"" + (dir / "more") + "\"]\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLog("reload: now watching", 10s)) << d.Log();
  EXPECT_EQ(d.Log().find("[fleet] changed"), std::string::npos) << d.Log();
  WriteFile(h.config, "[fleet]\npostgres = \"" + pg.conninfo("reload") + "\"\nhost = \"renamed\"\n");
  d.Signal(SIGHUP);
  ASSERT_TRUE(d.WaitForLog("reload: [fleet] changed; that takes a restart", 10s)) << d.Log();
  AddPoints(w, 10, 10, kWall0 + 10);
  w.Flush();
  ASSERT_TRUE(WaitFor([&] { return Converged(pg, "reload", h, 40); }, 20s)) << Diff(pg, "reload", h) << d.Log();
  EXPECT_EQ(pg.Query("SELECT host FROM hosts", "reload"), std::vector<std::string>{"zeta"});
  EXPECT_EQ(d.Stop(5s), std::optional<int>(0));
}

// sslmode reaches libpq: a server without SSL refuses sslmode=require, and says so.
TEST(FleetDaemon, SslmodeIsPassedThrough) {
  TW_REQUIRE_POSTGRES();
  PostgresServer pg;
  TempDir dir;
  fleet::FleetOptions o;
  o.conninfo = pg.tcp_conninfo() + "?sslmode=require";
  o.host = "eps";
  Status st = fleet::MigrateFleet(o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("SSL"), std::string::npos) << st.message();
  o.conninfo = pg.tcp_conninfo() + "?sslmode=disable";
  EXPECT_TRUE(fleet::MigrateFleet(o).ok());
  EXPECT_EQ(fleet::DescribeConninfo("postgresql://u:secret@db.example:5433/tw?sslmode=verify-full"),
            "host=db.example port=5433 dbname=tw user=u sslmode=verify-full");
}

}  // namespace
}  // namespace tw

// Shipping benchmark: how close does the fleet shipper come to a bare COPY of the same rows
// into the same PostgreSQL? A plain program (not Google Benchmark).
//
//   fleet_bench [--points N] [--runs R]
//
// Writes R runs (default 8) of tfevents files with N scalar points in all (default 1,000,000;
// two tags, one event per value), ingests them into a fresh store (untimed), starts a
// PostgreSQL of its own (tests/support/postgres_server.h: initdb in a temporary directory), then
// in this one process:
//   1. shipper: fleet::Shipper::ShipOnce into database `ship` (its schema created untimed
//      first): staging COPY, INSERT ... ON CONFLICT DO NOTHING, the marks in the store;
//   2. baseline: the same scalars read from the store and COPYed straight into a table with the
//      same columns and primary key in database `bare` (one COPY, one transaction).
// Prints rows/s for each (wall and CPU of this process; PostgreSQL's own CPU is the server's)
// and the ratio shipper / baseline.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fleet/fleet.h"
#include "fleet/pg.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "support/postgres_server.h"
#include "support/test_env.h"

namespace {

using namespace tw;

double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Timed {
  double wall = 0, cpu = 0;
};

template <typename F>
Timed Time(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = CpuSeconds();
  f();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), CpuSeconds() - c0};
}

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "fleet_bench: %s\n", why.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t points = 1000000, runs = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--points")) points = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--runs")) runs = std::atoll(argv[i + 1]);
    else Die(std::string("unknown flag ") + argv[i]);
  }
  if (testing::PostgresServer::BinDir().empty()) Die("PostgreSQL is not installed (tools/install-deps.sh)");
  testing::TempDir dir;
  const std::string root = dir / "logs", db = dir / "store.db";
  const int64_t steps = points / runs / 2;
  for (int64_t r = 0; r < runs; ++r) {
    testing::EventFileWriter w(root + "/run" + std::to_string(r) + "/" +
                               testing::EventFileName(1700000000, "bench", 1, 0));
    w.Add(testing::FileVersionEvent(1.7e9));
    for (int64_t s = 0; s < steps; ++s) {
      w.Add(testing::SimpleScalarEvent("train/loss", s, 1.7e9 + s, 1.0f / static_cast<float>(s + 1)));
      w.Add(testing::SimpleScalarEvent("lr", s, 1.7e9 + s, 0.001f));
      if (s % 10000 == 9999) w.Flush();
    }
    w.Flush();
  }
  {
    auto store = store::Store::Open(db);
    if (!store.ok()) Die(store.status().ToString());
    ingest::Summary summary;
    if (Status st = ingest::IngestPaths(**store, {root}, {}, &summary); !st.ok()) Die(st.ToString());
  }
  testing::PostgresServer pg;
  pg.CreateDatabase("ship");
  pg.CreateDatabase("bare");
  fleet::FleetOptions o;
  o.conninfo = pg.conninfo("ship");
  o.host = "bench";
  if (Status st = fleet::MigrateFleet(o); !st.ok()) Die(st.ToString());
  auto reader = store::OpenReadOnly(db);
  if (!reader.ok()) Die(reader.status().ToString());
  auto count = (*reader)->Prepare("SELECT count(*) FROM scalars");
  if (!count.ok() || !*count->Step()) Die("cannot count the store's points");
  const int64_t rows = count->Int(0);

  fleet::Shipper shipper(db, o);
  int64_t shipped = 0;
  const Timed ship = Time([&] {
    Result<fleet::PassStats> r = shipper.ShipOnce();
    if (!r.ok()) Die(r.status().ToString());
    shipped = r->rows;
  });

  auto bare = fleet::Pg::Connect(pg.conninfo("bare"), "", "fleet_bench");
  if (!bare.ok()) Die(bare.status().ToString());
  if (Status st = (*bare)->Exec(
          "CREATE TABLE scalars (host TEXT NOT NULL, series_id BIGINT NOT NULL, step BIGINT NOT NULL, "
          "source_id BIGINT NOT NULL, \"offset\" BIGINT NOT NULL, vidx INTEGER NOT NULL, wall_time DOUBLE PRECISION "
          "NOT NULL, value DOUBLE PRECISION, value_class SMALLINT NOT NULL, superseded SMALLINT NOT NULL, "
          "PRIMARY KEY (host, series_id, step, source_id, \"offset\", vidx))");
      !st.ok())
    Die(st.ToString());
  const Timed base = Time([&] {
    auto s = (*reader)->Prepare(
        "SELECT series_id, step, source_id, offset, vidx, wall_time, value, value_class, superseded FROM scalars");
    if (!s.ok()) Die(s.status().ToString());
    if (Status st = (*bare)->Exec("BEGIN"); !st.ok()) Die(st.ToString());
    Result<int64_t> n = (*bare)->CopyIn("COPY scalars FROM STDIN", [&](std::string* buf) -> Result<bool> {
      for (int i = 0; i < 4096; ++i) {
        Result<bool> more = s->Step();
        if (!more.ok()) return more.status();
        if (!*more) return false;
        buf->append("bench");
        for (int c = 0; c < 9; ++c) {
          buf->push_back('\t');
          if (s->IsNull(c)) buf->append("\\N");
          else if (c == 5 || c == 6) fleet::CopyDouble(s->Real(c), buf);
          else buf->append(std::to_string(s->Int(c)));
        }
        buf->push_back('\n');
      }
      return true;
    });
    if (!n.ok()) Die(n.status().ToString());
    if (Status st = (*bare)->Exec("COMMIT"); !st.ok()) Die(st.ToString());
  });
  std::printf("points in the store:     %lld (%lld runs)\n", static_cast<long long>(rows), static_cast<long long>(runs));
  std::printf("shipper (ShipOnce):      %8.2f s wall %8.2f s CPU  %10.0f rows/s (%lld rows sent)\n", ship.wall, ship.cpu,
              rows / ship.wall, static_cast<long long>(shipped));
  std::printf("baseline (bare COPY):    %8.2f s wall %8.2f s CPU  %10.0f rows/s\n", base.wall, base.cpu,
              rows / base.wall);
  std::printf("ratio shipper/baseline:  %.2f (rows/s, wall)\n", base.wall / ship.wall);
  return 0;
}

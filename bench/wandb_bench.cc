// W&B ingest benchmark: the .wandb path against the tfevents path on the same points, and
// end-to-end into SQLite against a bare INSERT of the same rows. A plain program.
//
//   wandb_bench [--mib N] [--reps K]
//
// Generates, in memory, a .wandb log of at least N MiB (default 128) as the Go core writes it
// (history rows of 20 keys with _step/_timestamp/_runtime as 1-part nested keys and a
// HistoryStep, a summary record per row, a stats record every 50 rows; LevelDB framing in
// 32 KiB blocks, by the tests' WandbLogWriter), and a
// PyTorch-style tfevents buffer holding the same scalar points (bench/gen.h). Then, best of K
// (default 3) on CPU time:
//   1. framing only: wandb::Scanner (CRC-32 over every chunk) vs tfrecord::Scanner (two CRC32Cs);
//   2. + record decoding: wandb::DecodeRecord vs DecodeEvent;
//   3. + the normalizer's per-item work (item name, value_json number), in history items/s;
//   4. end-to-end: IngestPaths of each file into a fresh store, against a bare prepared
//      INSERT OR IGNORE of as many rows, 20000 per transaction, into the same schema.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include "decode/event.h"
#include "wandb/record.h"
#include "decode/json_value.h"
#include "gen.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/event_writer.h"
#include "wandb/testing/log_writer.h"
#include "tfrecord/reader.h"
#include "tfrecord/writer.h"
#include "wandb/log_reader.h"

namespace tw::bench {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "wandb_bench: %s\n", why.c_str());
  std::exit(1);
}

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

struct Timing {
  double wall = 1e300, cpu = 1e300;
};

void Best(const std::function<void()>& fn, int reps, Timing* t) {
  for (int i = 0; i < reps; ++i) {
    const auto w0 = std::chrono::steady_clock::now();
    const double c0 = CpuSeconds();
    fn();
    t->cpu = std::min(t->cpu, CpuSeconds() - c0);
    t->wall = std::min(t->wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count());
  }
}

struct Generated {
  std::string wandb, tfevents;
  int64_t rows = 0, history_items = 0, points = 0, records = 0;
};

// The records through the tests' writer (tests/wandb/testing/log_writer.h): libprotobuf builds
// them, and its WandbLogWriter frames them as LevelDB's log writer does.
Generated Generate(size_t min_bytes) {
  namespace tt = tw::testing;
  Generated g;
  tt::WandbLogWriter log;
  int64_t num = 0;
  auto record = [&](const std::string& r) {
    log.Add(r);
    ++g.records;
  };
  tt::WandbRunInfo run;
  run.run_id = "benchrun";
  run.project = "bench";
  record(tt::WandbRunRecord(++num, run));
  const auto& tags = AllTags();
  std::vector<bool> seen(tags.size(), false);
  char buf[64];
  std::vector<tt::WandbKV> row, summary;
  for (int64_t step = 0; log.bytes().size() < min_bytes; ++step) {
    row.clear();
    summary.clear();
    for (size_t t = 0; t < tags.size(); ++t) {
      if (step % tags[t].every != 0) continue;
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(ValueFor(static_cast<int>(t), step, 1)));
      row.push_back(tt::Nested({tags[t].name}, buf));  // nested_key, as the core writes every key
      ++g.history_items;
    }
    summary = row;
    std::snprintf(buf, sizeof buf, "%.17g", WallFor(step, 0));
    row.push_back(tt::Nested({"_timestamp"}, buf));
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(step) * 0.25);
    row.push_back(tt::Nested({"_runtime"}, buf));
    row.push_back(tt::Nested({"_step"}, std::to_string(step)));
    g.history_items += 3;
    record(tt::WandbHistoryRecord(++num, row, step));
    record(tt::WandbSummaryRecord(++num, summary));
    ++g.rows;
    if (step % 50 == 0)
      record(tt::WandbStatsRecord(++num, WallFor(step, 0),
                                  {{"gpu.0.memoryAllocated", "42.5"}, {"gpu.0.gpu", "42.5"},
                                   {"cpu", "42.5"}, {"memory_percent", "42.5"}}));
    AddStep(step, static_cast<int>(tags.size()), false, 1, &seen, [&](const std::string& event) {
      tfrecord::AppendRecord(&g.tfevents, event);
      ++g.points;
    });
  }
  g.wandb = log.bytes();
  return g;
}

void WriteFile(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0)
    Die("cannot write " + p.string());
}

int64_t IngestOnce(const fs::path& logdir, const fs::path& db) {
  fs::remove(db);
  fs::remove(db.string() + "-wal");
  fs::remove(db.string() + "-shm");
  auto st = store::Store::Open(db.string());
  if (!st.ok()) Die(st.status().ToString());
  ingest::Summary s;
  if (Status r = ingest::IngestPaths(**st, {logdir.string()}, {}, &s); !r.ok()) Die(r.ToString());
  if (s.totals.errors) Die("ingest reported errors");
  return s.totals.points();
}

// The bare baseline: `rows` scalar rows through one prepared INSERT OR IGNORE (the ingester's
// statement), 20000 per transaction, into a fresh store with its run, series and source made.
void BareInsert(const fs::path& db, int64_t rows, int nseries) {
  fs::remove(db);
  fs::remove(db.string() + "-wal");
  fs::remove(db.string() + "-shm");
  auto st = store::Store::Open(db.string());
  if (!st.ok()) Die(st.status().ToString());
  store::Db& d = (*st)->db();
  if (!d.Exec("INSERT INTO runs(run_id, root, name, first_seen) VALUES (1, 'b', 'r', 0);"
              "INSERT INTO sources(source_id, run_id, path, dev, ino, first_seen) VALUES (1, 1, 'f', 0, 0, 0)").ok())
    Die("setup");
  for (int s = 1; s <= nseries; ++s)
    if (!d.Exec("INSERT INTO series(series_id, run_id, tag, kind) VALUES (" + std::to_string(s) + ", 1, 't" +
                std::to_string(s) + "', 'scalar')").ok())
      Die("series");
  auto ins = d.Prepare(
      "INSERT OR IGNORE INTO scalars(series_id, step, source_id, offset, vidx, wall_time, value, value_class) "
      "VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, 0)");
  if (!ins.ok()) Die("prepare");
  if (!d.Exec("BEGIN").ok()) Die("begin");
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t step = i / nseries;
    ins->Bind(1, i % nseries + 1).Bind(2, step).Bind(3, step * 1000).Bind(4, i % nseries)
        .Bind(5, 1.7e9 + static_cast<double>(step)).Bind(6, 0.5 + static_cast<double>(i % 97));
    if (!ins->Run().ok()) Die("insert");
    if (i % 20000 == 19999 && (!d.Exec("COMMIT").ok() || !d.Exec("BEGIN").ok())) Die("commit");
  }
  if (!d.Exec("COMMIT").ok()) Die("commit");
}

}  // namespace
}  // namespace tw::bench

int main(int argc, char** argv) {
  using namespace tw;
  using namespace tw::bench;
  size_t mib = 128;
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mib" && i + 1 < argc) mib = std::stoul(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::stoi(argv[++i]);
    else Die("usage: wandb_bench [--mib N] [--reps K]");
  }
  std::printf("generating a .wandb of >= %zu MiB and tfevents with the same points...\n", mib);
  const Generated g = Generate(mib << 20);
  const double wmib = static_cast<double>(g.wandb.size()) / (1 << 20);
  const double tmib = static_cast<double>(g.tfevents.size()) / (1 << 20);
  std::printf("  .wandb   %.1f MiB, %lld records, %lld history rows, %lld history items (%lld metric values)\n",
              wmib, static_cast<long long>(g.records), static_cast<long long>(g.rows),
              static_cast<long long>(g.history_items), static_cast<long long>(g.points));
  std::printf("  tfevents %.1f MiB, %lld events (one value each)\n\n", tmib, static_cast<long long>(g.points));

  // 1-3: in memory.
  Timing w_scan, t_scan, w_dec, t_dec, w_norm;
  int64_t check = 0;
  Best([&] {
    wandb::Scanner s(std::string_view(g.wandb).substr(7), 7, {}, wandb::BlockOrigin::kZero);
    int64_t n = 0;
    while (s.Next() == wandb::Scanner::Step::kRecord) ++n;
    check = n;
  }, reps, &w_scan);
  if (check != g.records) Die("wandb scan count " + std::to_string(check));
  Best([&] {
    tfrecord::Scanner s(g.tfevents, 0, {});
    int64_t n = 0;
    while (s.Next() == tfrecord::Scanner::Step::kRecord) ++n;
    check = n;
  }, reps, &t_scan);
  if (check != g.points) Die("tfevents scan count");
  wandb::Record rec;
  Best([&] {
    wandb::Scanner s(std::string_view(g.wandb).substr(7), 7, {}, wandb::BlockOrigin::kZero);
    int64_t items = 0;
    while (s.Next() == wandb::Scanner::Step::kRecord) {
      if (!wandb::DecodeRecord(s.record(), &rec).ok()) Die("decode");
      if (rec.kind == wandb::RecordKind::kHistory) items += static_cast<int64_t>(rec.items.size());
    }
    check = items;
  }, reps, &w_dec);
  if (check != g.history_items) Die("history items " + std::to_string(check));
  decode::Event ev;
  Best([&] {
    tfrecord::Scanner s(g.tfevents, 0, {});
    int64_t n = 0;
    while (s.Next() == tfrecord::Scanner::Step::kRecord) {
      if (!decode::DecodeEvent(s.record(), &ev).ok()) Die("decode event");
      n += static_cast<int64_t>(ev.values.size());
    }
    check = n;
  }, reps, &t_dec);
  if (check != g.points) Die("tfevents values");
  std::string name;
  double sink = 0;
  Best([&] {
    wandb::Scanner s(std::string_view(g.wandb).substr(7), 7, {}, wandb::BlockOrigin::kZero);
    int64_t items = 0;
    while (s.Next() == wandb::Scanner::Step::kRecord) {
      if (!wandb::DecodeRecord(s.record(), &rec).ok()) Die("decode");
      if (rec.kind != wandb::RecordKind::kHistory) continue;
      for (const auto& it : rec.items) {
        wandb::ItemName(rec, it, &name);
        double v;
        if (decode::ParseJsonNumber(it.value_json, &v)) sink += v;
        ++items;
      }
    }
    check = items;
  }, reps, &w_norm);
  if (check != g.history_items || sink == 0) Die("normalizer items");

  auto line = [](const char* what, const Timing& t, double mib, int64_t items, const char* unit) {
    std::printf("  %-44s %7.3f s cpu  %8.0f MiB/s  %7.2f M %s/s\n", what, t.cpu, mib / t.cpu,
                static_cast<double>(items) / t.cpu / 1e6, unit);
  };
  std::printf("in memory (best of %d, CPU time; one core):\n", reps);
  line("wandb  framing + CRC-32", w_scan, wmib, g.records, "records");
  line("tfevents framing + 2x CRC32C (baseline)", t_scan, tmib, g.points, "records");
  line("wandb  + wandb::DecodeRecord", w_dec, wmib, g.history_items, "items");
  line("tfevents + DecodeEvent (baseline)", t_dec, tmib, g.points, "values");
  line("wandb  + item name + value_json number", w_norm, wmib, g.history_items, "items");

  // 4: end-to-end.
  const fs::path work = fs::temp_directory_path() / ("wandb_bench." + std::to_string(getpid()));
  WriteFile(work / "wb/wandb/run-20260101_000000-benchrun/run-benchrun.wandb", g.wandb);
  WriteFile(work / "tf/run/events.out.tfevents.1700000000.bench.1.0", g.tfevents);
  Timing w_e2e, t_e2e, bare;
  int64_t wpoints = 0, tpoints = 0;
  for (int i = 0; i < reps; ++i) {
    Best([&] { wpoints = IngestOnce(work / "wb", work / "w.db"); }, 1, &w_e2e);
    Best([&] { tpoints = IngestOnce(work / "tf", work / "t.db"); }, 1, &t_e2e);
    Best([&] { BareInsert(work / "b.db", wpoints, 24); }, 1, &bare);
  }
  std::printf("\nend to end into SQLite (best of %d):\n", reps);
  auto e2e = [&](const char* what, const Timing& t, int64_t points) {
    std::printf("  %-44s %7.3f s cpu %7.3f s wall  %6.2f M points/s (cpu)\n", what, t.cpu, t.wall,
                static_cast<double>(points) / t.cpu / 1e6);
  };
  e2e("wandb ingest (history + system metrics)", w_e2e, wpoints);
  e2e("tfevents ingest, same metric values", t_e2e, tpoints);
  e2e("bare INSERT OR IGNORE, as many rows as wandb", bare, wpoints);
  std::printf("\n  ratio wandb points/s / bare rows/s: %.2f (cpu), %.2f (wall)\n",
              bare.cpu / w_e2e.cpu, bare.wall / w_e2e.wall);
  std::printf("  ratio wandb points/s / tfevents points/s: %.2f (cpu)\n",
              (static_cast<double>(wpoints) / w_e2e.cpu) / (static_cast<double>(tpoints) / t_e2e.cpu));
  fs::remove_all(work);
  return 0;
}

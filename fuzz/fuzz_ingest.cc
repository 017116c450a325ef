// libFuzzer target: the whole ingest path, with the promise the daemon rests on: a file read
// in one go and the same bytes read in two goes (the second part appended after the first
// read) leave the same store. The first byte picks the file's kind (TensorBoard event file,
// W&B .wandb log, wandb-history.jsonl, wandb-events.jsonl, a console log (W&B's
// files/output.log), a Lightning or YOLO metrics table, an MLflow file-store metric), the second
// the cut; the rest is the file. (HF's trainer_state.json is left out: a document is rewritten
// whole, never appended to, so two reads of a complete prefix are meant to differ.) Both stores start as copies of one migrated empty store, and are compared as the
// daemon tests compare them: every point, run event and hparam, each source's offset, record
// and error counts, and each ingest error's offset and kind.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "ingest/ingest.h"
#include "store/store.h"
#include "support/store_dump.h"

namespace {

namespace fs = std::filesystem;

struct Dirs {
  std::string root, logs, empty_store;
  Dirs() {
    char tmpl[] = "/tmp/tw-fuzz-ingest-XXXXXX";
    if (!::mkdtemp(tmpl)) std::abort();
    root = tmpl;
    logs = root + "/logs";
    empty_store = root + "/empty.db";
    auto s = tw::store::Store::Open(empty_store);  // migrated once; copied per input
    if (!s.ok()) std::abort();
  }
  ~Dirs() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

const Dirs& TheDirs() {
  static Dirs d;
  return d;
}

void Write(const std::string& path, std::string_view bytes, bool append) {
  {
    std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) std::abort();
  }
  // Console and table points take the file's mtime as their wall time: pinned, so that one
  // read and two compare.
  const struct timespec t[2] = {{1790000000, 0}, {1790000000, 0}};
  ::utimensat(AT_FDCWD, path.c_str(), t, 0);
}

std::unique_ptr<tw::store::Store> FreshStore(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path + suffix, ec);
  fs::copy_file(TheDirs().empty_store, path, ec);
  auto s = tw::store::Store::Open(path);
  tw::fuzz::Check(s.ok(), "a copy of the empty store opens");
  return std::move(*s);
}

void Ingest(tw::store::Store& store) {
  tw::ingest::IngestOptions options;
  options.batch_points = 5;  // commits inside the file too
  tw::ingest::Summary summary;
  tw::fuzz::Check(tw::ingest::IngestPaths(store, {TheDirs().logs}, options, &summary).ok(),
                  "the store never fails on bad input");
}

std::vector<std::string> Dump(tw::store::Store& store) {
  std::vector<std::string> d = tw::testing::DumpStore(store.db());
  auto add = [&](const char* prefix, const char* sql) {
    auto q = store.db().Prepare(sql);
    tw::fuzz::Check(q.ok(), "dump query");
    for (;;) {
      auto row = q->Step();
      tw::fuzz::Check(row.ok(), "dump query");
      if (!*row) break;
      std::string line = prefix;
      for (int c = 0; c < q->ColumnCount(); ++c) line += (c ? "|" : "") + q->Text(c);
      d.push_back(line);
    }
  };
  add("run|", "SELECT root, name, format FROM runs ORDER BY 1, 2");
  add("source|", "SELECT path, generation, committed_offset, records, status, error_count, resyncing "
                 "FROM sources ORDER BY 1, 2");
  add("error|", "SELECT path, offset, kind FROM ingest_errors ORDER BY 1, 2, 3");
  return d;
}

std::string Single(tw::store::Store& store, const char* sql) {
  auto q = store.db().Prepare(sql);
  tw::fuzz::Check(q.ok(), "query");
  auto row = q->Step();
  tw::fuzz::Check(row.ok(), "query");
  return *row ? q->Text(0) : std::string();
}
std::string LatestStatus(tw::store::Store& store) {
  return Single(store, "SELECT status FROM sources ORDER BY generation DESC LIMIT 1");
}
int64_t Points(tw::store::Store& store) {
  return std::stoll(Single(store, "SELECT (SELECT count(*) FROM scalars) + (SELECT count(*) FROM histograms) + "
                                  "(SELECT count(*) FROM texts)"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const Dirs& dirs = TheDirs();
  static const char* const kNames[] = {"events.out.tfevents.1700000000.host.1.0", "run-fuzz.wandb",
                                       "wandb-history.jsonl", "wandb-events.jsonl",
                                       "files/output.log", "metrics.csv", "results.csv",
                                       "1/0123456789abcdef0123456789abcdef/metrics/val/loss"};
  const std::string run = dirs.logs + "/run";
  std::error_code ec;
  fs::remove_all(dirs.logs, ec);
  const std::string file = run + "/" + kNames[data[0] % 8];
  fs::create_directories(fs::path(file).parent_path());
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  const size_t cut = data[1] * bytes.size() / 256;

  Write(file, bytes, false);
  auto one = FreshStore(dirs.root + "/one.db");
  Ingest(*one);

  Write(file, bytes.substr(0, cut), false);
  auto two = FreshStore(dirs.root + "/two.db");
  Ingest(*two);
  Write(file, bytes.substr(cut), true);
  Ingest(*two);

  // A file that is no TFRecord (or .wandb) is rejected, by design, once per version of it:
  // when it grows it is read again from 0 as a new generation (docs/errors.md), so the two
  // stores' bookkeeping differs. What must hold: both reject it, and neither holds a point.
  if (LatestStatus(*one) == "rejected") {
    tw::fuzz::Check(LatestStatus(*two) == "rejected", "rejected in one read, rejected in two");
    tw::fuzz::Check(Points(*one) == 0 && Points(*two) == 0, "a rejected file gives no points");
    return 0;
  }
  const std::vector<std::string> a = Dump(*one), b = Dump(*two);
  if (a != b) {
    std::fprintf(stderr, "one read (%zu lines) != two reads (%zu lines), cut at %zu of %zu\n", a.size(),
                 b.size(), cut, bytes.size());
    for (const auto& l : a)
      if (std::find(b.begin(), b.end(), l) == b.end()) std::fprintf(stderr, "  only in one: %s\n", l.c_str());
    for (const auto& l : b)
      if (std::find(a.begin(), a.end(), l) == a.end()) std::fprintf(stderr, "  only in two: %s\n", l.c_str());
    std::abort();
  }
  return 0;
}

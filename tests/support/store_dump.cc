#include "support/store_dump.h"

#include <algorithm>
#include <stdexcept>

#include "store/store.h"

namespace tw::testing {
namespace {

std::vector<std::string> Lines(store::Db& db, const std::string& sql) {
  auto st = db.Prepare(sql);
  if (!st.ok()) throw std::runtime_error(st.status().ToString());
  std::vector<std::string> out;
  for (;;) {
    auto row = st->Step();
    if (!row.ok()) throw std::runtime_error(row.status().ToString());
    if (!*row) break;
    std::string line;
    for (int c = 0; c < st->ColumnCount(); ++c) {
      if (c) line += '|';
      line += st->IsNull(c) ? "NULL" : st->Text(c);
    }
    out.push_back(std::move(line));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> DumpStore(store::Db& db) {
  std::vector<std::string> all;
  auto add = [&](const std::string& prefix, const std::string& sql) {
    for (auto& l : Lines(db, sql)) all.push_back(prefix + l);
  };
  const std::string from =
      " JOIN series s USING (series_id) JOIN runs r USING (run_id) JOIN sources f USING "
      "(source_id)";
  add("scalar|", "SELECT r.name, s.tag, f.path, f.generation, p.offset, p.vidx, p.step, "
                 "printf('%.17g', p.wall_time), printf('%.17g', p.value), p.value_class, "
                 "p.superseded FROM scalars p" + from);
  add("histogram|", "SELECT r.name, s.tag, f.path, p.offset, p.vidx, p.step, p.count, p.sum, "
                    "p.min, p.max, hex(p.buckets), p.superseded FROM histograms p" + from);
  add("text|", "SELECT r.name, s.tag, f.path, p.offset, p.vidx, p.step, p.text, p.superseded "
               "FROM texts p" + from);
  add("hparam|", "SELECT run, key, value_type, value FROM run_hparams");
  add("event|", "SELECT r.name, f.path, e.offset, e.kind, e.step, e.detail FROM run_events e "
                "JOIN runs r USING (run_id) JOIN sources f USING (source_id)");
  add("series|", "SELECT r.name, s.tag, s.kind, s.plugin FROM series s JOIN runs r USING (run_id)");
  return all;
}

std::vector<std::string> DumpLiveScalars(store::Db& db) {
  return Lines(db, "SELECT run, tag, step, printf('%.17g', value), value_class FROM scalar_points");
}

std::optional<std::vector<std::string>> DumpLiveScalars(const std::string& db_path) {
  Result<std::unique_ptr<store::Db>> db = store::OpenReadOnly(db_path);
  if (!db.ok()) return std::nullopt;
  try {
    return DumpLiveScalars(**db);
  } catch (const std::exception&) {  // Lines() throws on a failed query
    return std::nullopt;
  }
}

int64_t QueryInt(const std::string& db_path, const std::string& sql) {
  Result<std::unique_ptr<store::Db>> ro = store::OpenReadOnly(db_path);
  if (!ro.ok()) return -1;
  Result<store::Stmt> q = (*ro)->Prepare(sql);
  if (!q.ok()) return -1;
  Result<bool> row = q->Step();
  return row.ok() && *row ? q->Int(0) : -1;
}

std::optional<std::vector<std::string>> QueryRows(const std::string& db_path, const std::string& sql) {
  auto db = store::OpenReadOnly(db_path);
  if (!db.ok()) return std::nullopt;
  auto st = (*db)->Prepare(sql);
  if (!st.ok()) return std::nullopt;
  std::vector<std::string> out;
  for (;;) {
    auto row = st->Step();
    if (!row.ok()) return std::nullopt;
    if (!*row) break;
    std::string line;
    for (int c = 0; c < st->ColumnCount(); ++c) {
      if (c) line += '|';
      line += st->IsNull(c) ? std::string("NULL") : st->Text(c);
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace tw::testing

// The trainwatch store: one read-write connection (WAL) and the statements ingest needs.
// Owned by one thread (the ingest/writer thread); readers open their own read-only
// connections with OpenReadOnly. Writes happen between Begin() and Commit(); the caller
// commits points together with the source offset that covers them, so an interrupted
// ingest never loses or doubles a point.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/model.h"
#include "base/status.h"
#include "store/db.h"

namespace tw::store {

struct SourceRow {
  int64_t source_id = 0;
  int64_t run_id = 0;
  std::string path;
  int64_t generation = 0;
  int64_t dev = 0, ino = 0;
  int64_t size_seen = 0;
  int64_t committed_offset = 0;
  bool resyncing = false;
  int64_t resync_from = 0;
  std::string status = "active";
  int64_t records = 0;
  int64_t error_count = 0;
  std::string head;  // the file's first bytes (up to 64) when last read: its identity
  int64_t last_record_num = 0;  // W&B: Record.num of the last record read (gaps are lost data)
  // CRC-32C of the last bytes (up to 4 KiB) before committed_offset, committed with it: the
  // file still holds them when reading resumes, or it was rewritten in place. None: unknown.
  std::optional<int64_t> tail_crc;
  // W&B: the latest history row's _step and wall time when the offset was committed (the
  // run's resume state; see sql/011_source_wandb_step.sql). None: not known.
  std::optional<int64_t> wandb_step;
  double wandb_wall = 0;
  // A line format's own state beside the offset (sql/012_source_resume.sql). None: none kept.
  std::optional<std::string> resume_state;
};

struct SeriesRow {
  int64_t series_id = 0;
  std::string tag;
  std::string kind;  // scalar, histogram, text
  std::string plugin;
  int32_t data_class = 0;
  // The live (not superseded) point with the highest step, and when it was logged.
  std::optional<int64_t> max_step;
  double max_step_wall = 0;
};

struct RunCounters {
  int64_t images = 0, audio = 0, graphs = 0, run_metadata = 0, other_tensors = 0;
  bool any() const { return images || audio || graphs || run_metadata || other_tensors; }
};

// What a writer says about its run (W&B's run, header and exit records). Fields left unset
// keep their stored value.
struct RunInfo {
  std::optional<std::string> format, external_id, project, entity, display_name, sdk_version;
  std::optional<double> start_time;
  std::optional<int64_t> exit_code;
};

// The per-run key/value tables of W&B runs.
enum class RunValues { kConfig, kSummary };

// Value classes as stored in scalars.value_class.
enum ValueClass : int { kFinite = 0, kNaN = 1, kPosInf = 2, kNegInf = 3 };
ValueClass ClassOf(double v);

class Store {
 public:
  // Opens (creating if needed, with `create_mode`: 0600, or 0640 for a group of readers) and
  // migrates a store for writing. An existing store keeps its mode.
  static Result<std::unique_ptr<Store>> Open(const std::string& path, mode_t create_mode = 0600);
  ~Store();

  Db& db() { return *db_; }

  Status Begin();
  Status Commit();
  void Rollback();

  Result<int64_t> EnsureRun(std::string_view root, std::string_view name);
  Result<std::vector<SeriesRow>> LoadSeries(int64_t run_id);
  Result<int64_t> EnsureSeries(int64_t run_id, std::string_view tag, std::string_view kind,
                               std::string_view plugin, int32_t data_class);
  // How many SessionLog START events the run has so far.
  Result<int64_t> CountStarts(int64_t run_id);

  Result<std::optional<int64_t>> FindRun(std::string_view root, std::string_view name);
  Status RenameRun(int64_t run_id, std::string_view name);

  Result<std::optional<SourceRow>> FindSource(std::string_view path);  // newest generation
  // The active (else gone) source with this device and inode, whatever its path. An inode
  // number is reused once its file is deleted: compare `head` before taking it for this file.
  Result<std::optional<SourceRow>> FindSourceByInode(int64_t dev, int64_t ino);
  // Paths of every active source (the daemon's startup: which of them are gone).
  Result<std::vector<std::string>> ActiveSourcePaths();
  Status MoveSource(int64_t source_id, std::string_view path, int64_t run_id);
  Result<int64_t> AddSource(const SourceRow& row);  // source_id
  Status UpdateSource(const SourceRow& row);

  Status InsertScalar(int64_t series_id, int64_t step, int64_t source_id, int64_t offset,
                      int vidx, double wall_time, double value);
  Status InsertHistogram(int64_t series_id, int64_t step, int64_t source_id, int64_t offset,
                         int vidx, double wall_time, const model::Histogram& h);
  Status InsertText(int64_t series_id, int64_t step, int64_t source_id, int64_t offset, int vidx,
                    double wall_time, std::string_view text);
  Status ReplaceHParams(int64_t run_id, const std::vector<model::HParam>& hparams);
  Status InsertRunEvent(int64_t run_id, int64_t source_id, int64_t offset, std::string_view kind,
                        std::optional<int64_t> step, double wall_time, std::string_view detail);
  Status InsertError(std::optional<int64_t> source_id, std::string_view path, int64_t offset,
                     int64_t length, std::string_view kind, std::string_view detail);
  // Marks live points at step >= `from_step` logged before `before_wall` superseded (a
  // restart re-logs them): of every series of the run, or only of `series_ids` when given.
  // Returns how many points it marked.
  Result<int64_t> MarkSuperseded(int64_t run_id, int64_t from_step, double before_wall,
                                 const std::vector<int64_t>* series_ids = nullptr);
  // Marks every point read from a source superseded (the file was replaced).
  Status MarkSourceSuperseded(int64_t source_id);
  Status AddRunCounters(int64_t run_id, const RunCounters& c);

  Status UpdateRunInfo(int64_t run_id, const RunInfo& info);
  // The run this one continues: the latest other run with the same external id (a W&B run
  // resumed into a new directory) that started before it. Recorded in continues_run_id.
  Result<std::optional<int64_t>> LinkContinuedRun(int64_t run_id);
  // Upserts (or, with value_json nullopt, removes) one key of a run's config or summary.
  Status SetRunValue(RunValues table, int64_t run_id, std::string_view key,
                     std::optional<std::string_view> value_json);
  Status UpsertHParam(int64_t run_id, const model::HParam& p);
  // Removes hparam `key` and the dotted keys under it (a config key W&B removed).
  Status RemoveHParam(int64_t run_id, std::string_view key);
  Status SetSeriesStepMetric(int64_t series_id, std::string_view step_metric);
  // What the daemon says about itself (daemon_state), for `trainwatch status`.
  Status SetDaemonState(std::string_view key, std::string_view value);

 private:
  explicit Store(std::unique_ptr<Db> db);
  Status PrepareAll();

  std::unique_ptr<Db> db_;
  struct Statements;
  std::unique_ptr<Statements> st_;
};

// A read-only connection for queries beside a running writer.
Result<std::unique_ptr<Db>> OpenReadOnly(const std::string& path);

}  // namespace tw::store

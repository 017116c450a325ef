// Reads source files into the store, one file at a time, resuming from each file's committed
// offset: the source tracker says whether the file is new, moved, a new generation or refused;
// the format's reader frames its records (read/file_reader.h); the format's ingester
// (tfevents_ingester.h, wandb_ingester.h, console_ingester.h, ...) turns each record into
// points through a PointSink; commits carry the offset and the format's state together.
// Per-run state (each tag's plugin, its series, its highest live step, how many SessionLog
// STARTs were seen, W&B's history position) lives in a RunState owned by the caller, so the
// files of one run are read in order against one state. Single-threaded: the owner of the
// Store calls it.
#pragma once

#include <cmath>
#include <cstdint>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/source_names.h"
#include "base/status.h"
#include "decode/classify.h"
#include "decode/console_profiles.h"
#include "decode/event.h"
#include "decode/json_value.h"
#include "ingest/discover.h"
#include "ingest/source_tracker.h"
#include "store/store.h"

namespace tw::ingest {

struct Totals {
  int64_t files_read = 0;     // files that had new bytes
  int64_t files_rejected = 0; // not TFRecord
  int64_t files_unreadable = 0;  // could not be opened
  int64_t bytes = 0;          // bytes consumed (records and skipped damage)
  int64_t records = 0;
  int64_t scalars = 0, histograms = 0, texts = 0, hparams = 0, run_events = 0;
  int64_t non_finite = 0;     // scalars among them that are NaN or infinite
  int64_t blobs = 0;          // images, audio, graphs, ... counted only
  int64_t errors = 0;
  int64_t partial_tails = 0;  // files ending in a record not yet complete
  int64_t restarts = 0;
  // Runs other than the file's own that this read stored points or facts in (mlflow.db holds
  // many runs): the daemon hands them to diagnosis too.
  std::vector<int64_t> other_runs;

  void Add(const Totals& o);
  // One scalar stored: counted, and among the non-finite ones when it is.
  void CountScalar(double value) {
    ++scalars;
    non_finite += !std::isfinite(value);
  }
  int64_t points() const { return scalars + histograms + texts; }
};

struct IngestOptions {
  int64_t batch_points = 20000;  // commit at least this often, so readers are never blocked long
  // Stop a file after this many bytes (at a commit point) and report that more is pending, so
  // the caller can take turns between files. 0: read to the end.
  int64_t max_bytes_per_call = 0;
  // Checked at every commit point: when set, stop early (what was read is committed).
  const std::atomic<bool>* stop = nullptr;
  // A file whose real path (symlinks resolved) is outside its run's root is refused unless
  // this is set ([watch] follow_symlinks_outside_roots): whoever can write a logdir could
  // otherwise have the daemon read any file it can (a symlink to a private file).
  bool follow_symlinks_outside_root = false;
  // Console logs: the files read as console logs whatever their names (fnmatch globs of
  // absolute paths: the config's [[console]] globs, a file `diagnose --log` was given), and
  // the profiles that read them (null: the built-in ones).
  std::vector<std::string> console_globs;
  std::shared_ptr<const decode::ProfileSet> profiles;
  // The files will not grow (`diagnose --log`): what waits for more lines is stored at the end.
  bool files_complete = false;
};
// How `path` is read: as a console log when `options` names it so, else by its path.
sources::SourceKind KindOf(const std::string& path, const IngestOptions& options);

// Called with (bytes consumed so far in this file) after each commit.
using ProgressFn = std::function<void(int64_t bytes)>;

class PointSink;
class ConsoleIngester;
class HfStateIngester;
class CsvIngester;
class MlflowIngester;
class WandbIngester;
class TfEventsIngester;

// Where a W&B run's history is: the latest row's _step (system metrics, which have none, are
// stored at it) and its wall time, committed with each of its files' offsets; and
// define_metric's step metrics as (name or glob, step metric). Shared by a run's W&B files.
struct WandbCursor {
  bool has_step = false;
  int64_t step = 0;
  double wall = 0;
  std::vector<std::pair<std::string, std::string>> step_metrics;
};

class RunState {
 public:
  // `root`: the (canonical) root the run was found under; files that resolve outside it are
  // refused (IngestOptions::follow_symlinks_outside_root). Empty: no such check.
  RunState(store::Store& store, int64_t run_id, std::string root = {})
      : store_(store), run_id_(run_id), root_(std::move(root)) {}
  Status Load();  // series, plugins and live max steps from the store
  int64_t run_id() const { return run_id_; }
  const std::string& root() const { return root_; }
  WandbCursor& wandb() { return wandb_; }

 private:
  friend class FileIngester;
  friend class PointSink;
  struct Tag {
    decode::TagPlugin plugin;
    bool plugin_known = false;
    int64_t series[3] = {0, 0, 0};  // scalar, histogram, text: SeriesSlot(kind)
    bool has_step = false;
    int64_t max_step = 0;           // highest step among live (not superseded) points
    double max_step_wall = 0;       // when that point was logged

    // A point of this tag at `step`, logged at `wall`, was stored.
    void NoteStep(int64_t step, double wall) {
      if (!has_step || step > max_step) {
        max_step = step;
        max_step_wall = wall;
      } else if (step == max_step && wall > max_step_wall) {
        max_step_wall = wall;
      }
      has_step = true;
    }
  };
  static int SeriesSlot(decode::Kind kind) {
    return kind == decode::Kind::kScalar ? 0 : kind == decode::Kind::kHistogram ? 1 : 2;
  }
  Status LoadWandbResume(const std::vector<store::SeriesRow>& series);

  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  store::Store& store_;
  int64_t run_id_;
  std::string root_;
  std::unordered_map<std::string, Tag, Hash, std::equal_to<>> tags_;
  int64_t starts_ = 0;
  WandbCursor wandb_;
};

class FileIngester {
 public:
  FileIngester(store::Store& store, IngestOptions options);
  ~FileIngester();

  // Reads whatever `path` holds beyond its committed offset. Problems in the file are
  // recorded (ingest_errors) and counted, not returned; a non-ok Status means the store
  // failed (disk full, I/O) and nothing of this call's open batch was committed. A path that
  // is not a regular file, or resolves outside the run's root, is refused without a byte of
  // it read, and reported once (until something else is put at the path).
  // `*more` (if given) says whether the file has bytes left that this call did not read
  // (max_bytes_per_call or stop).
  Status IngestFile(RunState& run, const std::string& path, Totals* totals,
                    const ProgressFn& progress = {}, bool* more = nullptr);
  // The same for an object of an object store (`path` its s3:// URL, `bytes` its content as
  // listed, `facts` its size and time): the same tracker, readers and commits as a file.
  Status IngestObject(RunState& run, const std::string& path, read::ByteSource& bytes,
                      const SourceFacts& facts, Totals* totals, const ProgressFn& progress = {},
                      bool* more = nullptr);

 private:
  // Both: tracks the source and reads it with its format's reader. `bytes` null: the path
  // could not be opened (the reader reports why).
  Status ReadSource(RunState& run, const std::string& path, const SourceFacts& facts,
                    read::ByteSource* bytes, Totals* totals, const ProgressFn& progress,
                    bool* more);
  class Batch;
  // How one format's records are handled: the one place a format plugs into ReadRecords.
  struct RecordHandler {
    Status (FileIngester::*record)(RunState& run, Batch& b, std::string_view record,
                                   int64_t offset);
    bool wandb_resume;  // the run's W&B step and wall time are committed with the offset
    // Writes the format's own state into the source row, to be committed with the offset.
    void (FileIngester::*save_state)(Batch& b) = nullptr;
    // At the end of a read (not one paused for its turn), before its last commit and in its
    // transaction: what must be committed with the offset (a W&B run's side files, the
    // console lines still waiting when the log is whole).
    Status (FileIngester::*at_end)(RunState& run, Batch& b) = nullptr;
  };
  template <typename Reader>
  Status ReadRecords(RunState& run, Batch& b, Reader& reader, const RecordHandler& handler,
                     const std::string& path,
                     int64_t size, const std::string& head, Totals* totals,
                     const ProgressFn& progress, bool* more);
  // TensorBoard event files (tfevents_ingester.h).
  Status ProcessRecord(RunState& run, Batch& b, std::string_view record, int64_t offset);
  std::unique_ptr<TfEventsIngester> tfevents_;
  // Supersedes live points at step >= `step` logged before this event (before `before_wall`
  // when given: a format whose lines are in time order supersedes every earlier point): of
  // the whole run, or of `series` only. Records a restart event when anything was superseded
  // or `always`.
  Status Restart(RunState& run, Batch& b, int64_t step, double wall, int64_t offset,
                 std::string detail, const std::vector<int64_t>* series, bool always,
                 std::optional<double> before_wall = std::nullopt);

  // W&B (wandb_ingester.h).
  Status ProcessWandbRecord(RunState& run, Batch& b, std::string_view record, int64_t offset);
  Status ProcessWandbLine(RunState& run, Batch& b, std::string_view line, int64_t offset);
  Status LoadLegacySideFiles(RunState& run, Batch& b);
  std::unique_ptr<WandbIngester> wandb_;
  Result<int64_t> SeriesFor(RunState& run, RunState::Tag& tag, std::string_view name,
                            decode::Kind kind);
  friend class PointSink;

  store::Store& store_;
  IngestOptions options_;
  SourceTracker tracker_;

  // Console logs (console_ingester.h).
  Status ProcessConsoleLine(RunState& run, Batch& b, std::string_view line, int64_t offset);
  void SaveConsoleState(Batch& b);
  Status FinishConsole(RunState& run, Batch& b);
  std::unique_ptr<ConsoleIngester> console_;

  // Documents rewritten whole (HF's trainer_state.json).
  using DocumentHandler = Status (FileIngester::*)(PointSink& sink, const decode::JsonNode& doc);
  Status ReadDocument(RunState& run, Batch& b, const std::string& path, int64_t size,
                      const std::string& head, Totals* totals, DocumentHandler handler);
  Status ProcessHfState(PointSink& sink, const decode::JsonNode& doc);
  std::unique_ptr<HfStateIngester> hf_state_;

  // Metrics tables (csv_ingester.h) and Lightning's hparams.yaml beside them.
  Status ProcessCsvLine(RunState& run, Batch& b, std::string_view line, int64_t offset);
  void SaveCsvState(Batch& b);
  Status LoadHParamsYaml(RunState& run, Batch& b);
  std::unique_ptr<CsvIngester> csv_;

  // MLflow's file store (mlflow_ingester.h).
  Status ProcessMlflowLine(RunState& run, Batch& b, std::string_view line, int64_t offset);
  Status LoadMlflowRunFiles(RunState& run, Batch& b);
  std::unique_ptr<MlflowIngester> mlflow_;
  // mlflow.db (mlflow_db_ingester.h): one file, many runs.
  Status ReadMlflowDb(RunState& container, Batch& b, const std::string& path, Totals* totals,
                      bool* more);
  double file_wall_ = 0;  // the file's mtime: when its lines were written, as near as known
};

}  // namespace tw::ingest

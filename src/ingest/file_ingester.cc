#include "ingest/file_ingester.h"

#include <cmath>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include "base/file_io.h"
#include "base/json.h"
#include "base/source_names.h"
#include "decode/flat_yaml.h"
#include "ingest/batch.h"
#include "ingest/console_ingester.h"
#include "ingest/csv_ingester.h"
#include "ingest/tfevents_ingester.h"
#include "ingest/wandb_ingester.h"
#include "ingest/hf_state_ingester.h"
#include "ingest/mlflow_db_ingester.h"
#include "ingest/mlflow_ingester.h"
#include "ingest/point_sink.h"
#include "read/lines.h"
#include "tfrecord/reader.h"
#include "wandb/log_reader.h"

namespace tw::ingest {

using decode::Kind;

void Totals::Add(const Totals& o) {
  files_read += o.files_read;
  files_rejected += o.files_rejected;
  files_unreadable += o.files_unreadable;
  bytes += o.bytes;
  records += o.records;
  scalars += o.scalars;
  non_finite += o.non_finite;
  histograms += o.histograms;
  texts += o.texts;
  hparams += o.hparams;
  run_events += o.run_events;
  blobs += o.blobs;
  errors += o.errors;
  partial_tails += o.partial_tails;
  restarts += o.restarts;
  other_runs.insert(other_runs.end(), o.other_runs.begin(), o.other_runs.end());
}

namespace {

// Documents rewritten whole are read whole; an HF trainer state of a very long run with
// evaluation every few steps is a few tens of MiB.
constexpr int64_t kMaxDocumentBytes = int64_t{256} << 20;

}  // namespace

sources::SourceKind KindOf(const std::string& path, const IngestOptions& options) {
  for (const auto& glob : options.console_globs)
    if (glob == path || ::fnmatch(glob.c_str(), path.c_str(), FNM_PATHNAME) == 0)
      return sources::SourceKind::kConsole;
  return sources::KindOfPath(path);
}

FileIngester::FileIngester(store::Store& store, IngestOptions options)
    : store_(store), options_(std::move(options)), tracker_(store) {
  if (!options_.profiles) options_.profiles = decode::ProfileSet::BuiltIn();
  console_ = std::make_unique<ConsoleIngester>(options_.profiles);
  hf_state_ = std::make_unique<HfStateIngester>();
  csv_ = std::make_unique<CsvIngester>();
  mlflow_ = std::make_unique<MlflowIngester>();
  wandb_ = std::make_unique<WandbIngester>();
  tfevents_ = std::make_unique<TfEventsIngester>();
}

FileIngester::~FileIngester() = default;

Status FileIngester::ProcessConsoleLine(RunState& run, Batch& b, std::string_view line,
                                        int64_t offset) {
  PointSink sink(*this, run, b);
  return console_->Line(sink, line, offset, file_wall_);
}

void FileIngester::SaveConsoleState(Batch& b) { b.source.resume_state = console_->State(); }

Status FileIngester::FinishConsole(RunState& run, Batch& b) {
  if (!options_.files_complete) return Status::Ok();  // more lines may come: they wait
  PointSink sink(*this, run, b);
  return console_->Finish(sink, file_wall_);
}


namespace {
}  // namespace

Status RunState::Load() {
  tags_.clear();
  Result<std::vector<store::SeriesRow>> series = store_.LoadSeries(run_id_);
  if (!series.ok()) return series.status();
  for (const auto& s : *series) {
    Tag& t = tags_[s.tag];
    if (!s.plugin.empty() || s.data_class != 0) {
      t.plugin = {s.plugin, s.data_class};
      t.plugin_known = true;
    }
    const Kind kind = s.kind == "scalar" ? Kind::kScalar
                      : s.kind == "histogram" ? Kind::kHistogram
                                              : Kind::kText;
    t.series[RunState::SeriesSlot(kind)] = s.series_id;
    if (s.max_step && (!t.has_step || *s.max_step > t.max_step)) {
      t.has_step = true;
      t.max_step = *s.max_step;
      t.max_step_wall = s.max_step_wall;
    }
  }
  Result<int64_t> starts = store_.CountStarts(run_id_);
  if (!starts.ok()) return starts.status();
  starts_ = *starts;
  // W&B: system metrics go at the latest history step; define_metric's step metrics apply to
  // series created later.
  TW_RETURN_IF_ERROR(LoadWandbResume(*series));
  wandb_.step_metrics.clear();
  Result<store::Stmt> m = store_.db().Prepare(
      "SELECT detail FROM run_events WHERE run_id = ?1 AND kind = 'define_metric' "
      "ORDER BY source_id, offset");
  if (!m.ok()) return m.status();
  m->Bind(1, run_id_);
  for (;;) {
    Result<bool> row = m->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    const std::string d = m->Text(0);  // "<name or glob>\t<step metric>"
    const size_t tab = d.find('\t');
    if (tab != std::string::npos) wandb_.step_metrics.emplace_back(d.substr(0, tab), d.substr(tab + 1));
  }
  return Status::Ok();
}

// The latest history row's step and wall time, exactly as committed with its source's offset
// (store version 11); for sources committed before that, reconstructed from the highest steps.
Status RunState::LoadWandbResume(const std::vector<store::SeriesRow>& series) {
  wandb_.has_step = false;
  wandb_.step = 0;
  Result<store::Stmt> resume = store_.db().Prepare(
      "SELECT wandb_step, wandb_wall FROM sources WHERE run_id = ?1 AND wandb_step IS NOT NULL "
      "ORDER BY last_read DESC, source_id DESC LIMIT 1");
  if (!resume.ok()) return resume.status();
  resume->Bind(1, run_id_);
  Result<bool> resumed = resume->Step();
  if (!resumed.ok()) return resumed.status();
  if (*resumed) {
    wandb_.has_step = true;
    wandb_.step = resume->Int(0);
    wandb_.wall = resume->Real(1);
    return Status::Ok();
  }
  for (const auto& [name, tag] : tags_) {
    if (!tag.has_step || name.starts_with("system/")) continue;
    if (!wandb_.has_step || tag.max_step > wandb_.step) {
      wandb_.step = tag.max_step;
      wandb_.wall = tag.max_step_wall;
    }
    wandb_.has_step = true;
  }
  // After a resume that went back (a 'restart' event), rows count up again from its step: the
  // latest row is the highest live step logged since, not the highest of all, which keys not
  // logged again since the resume keep from before it. (Taking that one put the system
  // metrics read after a reload at a stale step, where one read of the whole file put them
  // at the row they follow.)
  Result<store::Stmt> last = store_.db().Prepare(
      "SELECT e.source_id, e.offset, e.step, e.wall_time FROM run_events e JOIN sources s "
      "USING (source_id) WHERE e.run_id = ?1 AND e.kind = 'restart' AND e.step IS NOT NULL "
      "AND s.path LIKE '%.wandb' ORDER BY e.source_id DESC, e.offset DESC LIMIT 1");
  if (!last.ok()) return last.status();
  last->Bind(1, run_id_);
  Result<bool> restarted = last->Step();
  if (!restarted.ok()) return restarted.status();
  if (*restarted) {
    const int64_t source = last->Int(0), offset = last->Int(1), from = last->Int(2);
    wandb_.has_step = true;
    wandb_.step = from;
    wandb_.wall = last->Real(3);
    for (const auto& s : series) {
      if (s.kind == "text" || s.tag.starts_with("system/")) continue;
      Result<store::Stmt> q = store_.db().Prepare(
          std::string("SELECT step, wall_time FROM ") +
          (s.kind == "scalar" ? "scalars" : "histograms") +
          " WHERE series_id = ?1 AND step >= ?4 AND superseded = 0 AND (source_id > ?2 OR "
          "(source_id = ?2 AND offset >= ?3)) ORDER BY step DESC, wall_time DESC LIMIT 1");
      if (!q.ok()) return q.status();
      q->Bind(1, s.series_id).Bind(2, source).Bind(3, offset).Bind(4, from);
      Result<bool> row = q->Step();
      if (!row.ok()) return row.status();
      if (*row && q->Int(0) >= wandb_.step) {
        wandb_.step = q->Int(0);
        wandb_.wall = q->Real(1);
      }
    }
  }
  return Status::Ok();
}


Status FileIngester::IngestFile(RunState& run, const std::string& path, Totals* totals,
                                const ProgressFn& progress, bool* more) {
  if (more) *more = false;
  // Opened once (never blocking), checked, and that descriptor read: a path swapped for a
  // FIFO or a symlink after a check cannot slip past it.
  Result<InputFile> file = InputFile::Open(path);
  struct stat st;
  if (file.ok()) {
    st = file->stat();
    if (!run.root().empty() && !options_.follow_symlinks_outside_root) {
      Result<std::string> real = file->RealPath(path);
      if (!real.ok() || !IsWithin(*real, run.root()))
        return tracker_.Refuse(run, path, "outside_root",
                               "resolves to " + (real.ok() ? *real : std::string("an unknown path")) +
                                   ", outside the root " + run.root() +
                                   "; not read (set [watch] follow_symlinks_outside_roots to read it)",
                               totals);
    }
  } else if (file.status().code() == Code::kNotFound) {
    return Status::Ok();  // deleted since it was listed
  } else if (file.status().code() == Code::kInvalidArgument) {
    struct stat what {};
    ::stat(path.c_str(), &what);
    return tracker_.Refuse(run, path, "not_regular_file",
                           std::string("it is ") + FileTypeName(what.st_mode) +
                               ", not a regular file; not read",
                           totals);
  } else if (::stat(path.c_str(), &st) != 0) {  // unreadable: the reader says open_failed
    if (errno == ENOENT) return Status::Ok();
    return IoError(path + ": cannot stat: " + std::strerror(errno));
  }
  std::unique_ptr<read::FdSource> bytes;
  if (file.ok()) bytes = std::make_unique<read::FdSource>(file->Release(), path);
  return ReadSource(run, path, SourceFacts::Of(st), bytes.get(), totals, progress, more);
}

Status FileIngester::IngestObject(RunState& run, const std::string& path, read::ByteSource& bytes,
                                  const SourceFacts& facts, Totals* totals,
                                  const ProgressFn& progress, bool* more) {
  if (more) *more = false;
  return ReadSource(run, path, facts, &bytes, totals, progress, more);
}

Status FileIngester::ReadSource(RunState& run, const std::string& path, const SourceFacts& facts,
                                read::ByteSource* bytes, Totals* totals,
                                const ProgressFn& progress, bool* more) {
  const sources::SourceKind kind = KindOf(path, options_);
  Batch b;
  b.bytes = bytes;
  std::string head;
  if (bytes) {
    Result<std::string> h = read::ReadString(*bytes, 0, kHeadBytes);
    if (h.ok()) head = std::move(*h);
  }
  const int64_t size = facts.size;
  Result<SourceTracker::Decision> tracked = tracker_.Track(run, path, facts, head, bytes, kind);
  if (!tracked.ok()) return tracked.status();
  if (!tracked->read) return Status::Ok();
  b.source = std::move(tracked->source);
  // The tracker's transaction is open: what follows commits it, or rolls it back.
  auto fail = [&](Status s) {
    store_.Rollback();
    return s;
  };

  const read::ScanState scan{b.source.resyncing, static_cast<uint64_t>(b.source.resync_from),
                             false};
  const auto offset = static_cast<uint64_t>(b.source.committed_offset);
  // Reads with `Reader` from the committed offset, what was opened and checked above.
  auto read_with = [&]<typename Reader>(Reader& reader, const RecordHandler& handler) {
    if (bytes) reader.Use(*bytes);
    return ReadRecords(run, b, reader, handler, path, size, head, totals, progress, more);
  };
  if (sources::IsWandbLog(path) || sources::IsWandbJsonl(path)) {
    if (b.source.committed_offset == 0) {  // even an empty log makes its directory a W&B run
      store::RunInfo info;
      info.format = "wandb";
      if (Status s = store_.UpdateRunInfo(run.run_id(), info); !s.ok()) return fail(s);
    }
  }
  if (kind == sources::SourceKind::kConsole) {
    if (b.source.committed_offset == 0) {
      store::RunInfo info;
      info.format = "console";
      if (Status s = store_.UpdateRunInfo(run.run_id(), info); !s.ok()) return fail(s);
    }
    console_->Resume(b.source.resume_state);
    file_wall_ = facts.mtime;
    read::LineReader reader(path, offset, scan);
    return read_with(reader, RecordHandler{&FileIngester::ProcessConsoleLine, false,
                                           &FileIngester::SaveConsoleState,
                                           &FileIngester::FinishConsole});
  }
  if (kind == sources::SourceKind::kCsv) {
    csv_->Resume(b.source.resume_state);
    file_wall_ = facts.mtime;
    read::LineReader reader(path, offset, scan);
    // Lightning's hparams.yaml beside it is read with the table, in its transaction.
    return read_with(reader, RecordHandler{&FileIngester::ProcessCsvLine, false,
                                           &FileIngester::SaveCsvState,
                                           &FileIngester::LoadHParamsYaml});
  }
  if (kind == sources::SourceKind::kMlflowDb) {
    // SQLite opens its file by path: a database is read only where it lies on a local disk
    // (object-store listings leave mlflow.db out).
    if (!facts.local) {
      store_.Rollback();
      return Status::Ok();
    }
    return ReadMlflowDb(run, b, path, totals, more);
  }
  if (kind == sources::SourceKind::kMlflowMetric) {
    read::LineReader reader(path, offset, scan);
    return read_with(reader, RecordHandler{&FileIngester::ProcessMlflowLine, false, nullptr,
                                           &FileIngester::LoadMlflowRunFiles});
  }
  if (kind == sources::SourceKind::kHfState) {
    file_wall_ = facts.mtime;
    return ReadDocument(run, b, path, size, head, totals, &FileIngester::ProcessHfState);
  }
  if (kind == sources::SourceKind::kWandbJsonl) {
    read::LineReader reader(path, offset, scan);
    // The run's config.yaml and wandb-summary.json are rewritten whole, not appended to:
    // read whenever the history grows, committed with it.
    const bool history = path.ends_with("wandb-history.jsonl");
    return read_with(reader, RecordHandler{&FileIngester::ProcessWandbLine, true, nullptr,
                                           history ? &FileIngester::LoadLegacySideFiles : nullptr});
  }
  if (kind == sources::SourceKind::kWandbLog) {
    wandb::FileReader reader(path, offset, scan);
    return read_with(reader, RecordHandler{&FileIngester::ProcessWandbRecord, true});
  }
  tfrecord::FileReader reader(path, offset, scan);
  return read_with(reader, RecordHandler{&FileIngester::ProcessRecord, false});
}

// A JSON document the writer rewrites whole (HF's trainer_state.json): read whole whenever it
// changed, from offset 0, in one transaction. The store's transaction is open on entry; on
// return it is committed, or rolled back on failure.
Status FileIngester::ReadDocument(RunState& run, Batch& b, const std::string& path, int64_t size,
                                  const std::string& head, Totals* totals,
                                  DocumentHandler handler) {
  auto fail = [&](Status s) {
    store_.Rollback();
    return s;
  };
  b.totals.files_read = 1;
  auto finish = [&]() -> Status {
    b.source.size_seen = size;
    if (head.size() > b.source.head.size()) b.source.head = head;
    TW_RETURN_IF_ERROR(store_.UpdateSource(b.source));
    TW_RETURN_IF_ERROR(store_.Commit());
    totals->Add(b.totals);
    return Status::Ok();
  };
  auto report = [&](int64_t offset, std::string_view kind, const std::string& detail) -> Status {
    b.totals.errors++;
    b.source.error_count++;
    b.source.status = "rejected";  // read again when it changes (a new generation)
    b.totals.files_rejected++;
    return store_.InsertError(b.source.source_id, path, offset, 0, kind, detail);
  };
  if (size > kMaxDocumentBytes) {
    Status s = report(0, "document_too_large",
                      "a document of " + std::to_string(size) + " bytes, over the " +
                          std::to_string(kMaxDocumentBytes >> 20) + " MiB read whole; not read");
    if (s.ok()) s = finish();
    return s.ok() ? s : fail(s);
  }
  std::string text(static_cast<size_t>(size), '\0');
  Result<size_t> got = b.bytes ? b.bytes->ReadAt(text.data(), text.size(), 0)
                              : Result<size_t>(IoError(path + ": cannot be opened"));
  if (!got.ok()) {
    b.totals.errors++;
    b.source.error_count++;
    Status s = store_.InsertError(b.source.source_id, path, 0, 0, "read_failed", got.status().message());
    if (s.ok()) s = finish();
    return s.ok() ? s : fail(s);
  }
  text.resize(*got);
  decode::JsonNode doc;
  size_t error_at = 0;
  Status parsed = decode::ParseJson(text, &doc, &error_at);
  if (!parsed.ok()) {
    // Being written (the writer truncates, then writes): the end is missing. A state, not an
    // error: the next change reads it again.
    const size_t last = text.find_last_not_of(" \t\r\n");
    const bool truncated = last == std::string::npos || text[last] != '}' || error_at >= text.size();
    Status s = truncated ? Status::Ok()
                         : report(static_cast<int64_t>(error_at), "bad_json",
                                  "not JSON: " + parsed.message() + "; read again when it changes");
    if (truncated) b.totals.partial_tails++;
    if (s.ok()) s = finish();
    return s.ok() ? s : fail(s);
  }
  PointSink sink(*this, run, b);
  if (Status s = (this->*handler)(sink, doc); !s.ok()) return fail(s);
  b.source.committed_offset = static_cast<int64_t>(text.size());
  b.source.tail_crc = TailCrc(b.bytes, b.source.committed_offset);
  b.source.records++;
  b.totals.records++;
  b.totals.bytes = static_cast<int64_t>(text.size());
  if (Status s = finish(); !s.ok()) return fail(s);
  return Status::Ok();
}

Status FileIngester::ProcessRecord(RunState& run, Batch& b, std::string_view record,
                                   int64_t offset) {
  PointSink sink(*this, run, b);
  return tfevents_->Record(sink, record, offset);
}

Status FileIngester::ProcessWandbRecord(RunState& run, Batch& b, std::string_view record,
                                        int64_t offset) {
  PointSink sink(*this, run, b);
  return wandb_->Record(sink, record, offset);
}

Status FileIngester::ProcessWandbLine(RunState& run, Batch& b, std::string_view line,
                                      int64_t offset) {
  PointSink sink(*this, run, b);
  return wandb_->Line(sink, line, offset);
}

// In the history's transaction (RecordHandler::at_end): committed with its offset, so a read
// that fails (disk full) reads them again with the history.
Status FileIngester::LoadLegacySideFiles(RunState& run, Batch& b) {
  PointSink sink(*this, run, b);
  return wandb_->LegacySideFiles(sink);
}

Status FileIngester::ProcessCsvLine(RunState& run, Batch& b, std::string_view line,
                                    int64_t offset) {
  PointSink sink(*this, run, b);
  return csv_->Line(sink, line, offset, file_wall_);
}

void FileIngester::SaveCsvState(Batch& b) { b.source.resume_state = csv_->State(); }

Status FileIngester::LoadHParamsYaml(RunState& run, Batch& b) {
  const std::string path = sources::RunDirOf(b.source.path, sources::SourceKind::kCsv) + "/hparams.yaml";
  Result<InputFile> f = InputFile::Open(path);
  if (!f.ok()) return Status::Ok();  // none (YOLO), or not a regular file: nothing to read
  const std::string text = f->Head(64 << 10);  // hyperparameters: a few hundred bytes
  std::vector<model::HParam> hparams;
  for (const auto& [key, json] : decode::ParseFlatYaml(text)) {
    decode::JsonNode v;
    if (decode::ParseJson(json, &v).ok()) ConfigHParams(key, v, 0, &hparams);
  }
  for (const auto& p : hparams) TW_RETURN_IF_ERROR(store_.UpsertHParam(run.run_id(), p));
  return Status::Ok();
}

Status FileIngester::ProcessHfState(PointSink& sink, const decode::JsonNode& doc) {
  return hf_state_->Document(sink, doc, file_wall_);
}


// Reads records from the committed offset to the end and commits as it goes. The store's
// transaction is open on entry; on return it is committed, or rolled back on failure.
template <typename Reader>
Status FileIngester::ReadRecords(RunState& run, Batch& b, Reader& reader,
                                 const RecordHandler& handler, const std::string& path,
                                 int64_t size, const std::string& head, Totals* totals,
                                 const ProgressFn& progress, bool* more) {
  auto fail = [&](Status s) {
    store_.Rollback();
    return s;
  };
  const int64_t start_offset = b.source.committed_offset;
  b.totals.files_read = 1;
  if (Status open = reader.Open(); !open.ok()) {
    b.totals.errors++;
    b.totals.files_unreadable++;
    b.source.error_count++;
    Status s = store_.InsertError(b.source.source_id, path, b.source.committed_offset, 0,
                                  "open_failed", open.message());
    if (s.ok()) s = store_.UpdateSource(b.source);
    if (s.ok()) s = store_.Commit();
    if (!s.ok()) return fail(s);
    totals->Add(b.totals);
    return Status::Ok();
  }

  auto sync_source = [&] {
    b.source.committed_offset = static_cast<int64_t>(reader.position());
    b.source.resyncing = reader.state().resyncing;
    b.source.resync_from = static_cast<int64_t>(reader.state().resync_from);
    b.source.size_seen = std::max<int64_t>(size, b.source.committed_offset);
    if (head.size() > b.source.head.size()) b.source.head = head;  // the file has grown
    b.source.tail_crc = TailCrc(b.bytes, b.source.committed_offset);
    if (handler.wandb_resume && run.wandb_.has_step) {  // committed with the offset
      b.source.wandb_step = run.wandb_.step;
      b.source.wandb_wall = run.wandb_.wall;
    }
    if (handler.save_state) (this->*handler.save_state)(b);
  };
  auto commit = [&]() -> Status {
    sync_source();
    TW_RETURN_IF_ERROR(store_.UpdateSource(b.source));
    if (b.counters.any()) TW_RETURN_IF_ERROR(store_.AddRunCounters(run.run_id(), b.counters));
    b.counters = {};
    for (const auto& [key, value] : b.summary) {
      const std::optional<std::string_view> v = value ? std::optional<std::string_view>(*value) : std::nullopt;
      TW_RETURN_IF_ERROR(store_.SetRunValue(store::RunValues::kSummary, run.run_id(), key, v));
    }
    b.summary.clear();
    TW_RETURN_IF_ERROR(store_.Commit());
    b.points_since_commit = 0;
    if (progress) progress(b.source.committed_offset - start_offset);
    return Status::Ok();
  };

  for (bool reading = true; reading;) {
    switch (reader.Next()) {
      case Reader::Step::kRecord: {
        Status s = (this->*handler.record)(run, b, reader.record(),
                                            static_cast<int64_t>(reader.record_offset()));
        if (!s.ok()) return fail(s);
        b.totals.records++;
        b.source.records++;
        break;
      }
      case Reader::Step::kProblem: {
        const auto& p = reader.problem();
        if (read::RejectsFile(p.kind)) {
          b.source.status = "rejected";
          b.totals.files_rejected++;
        }
        b.totals.errors++;
        b.source.error_count++;
        Status s = store_.InsertError(b.source.source_id, path, static_cast<int64_t>(p.offset),
                                      static_cast<int64_t>(p.length),
                                      read::ProblemKindName(p.kind), p.detail);
        if (!s.ok()) return fail(s);
        break;
      }
      case Reader::Step::kYield:  // a chunk of damage or padding skipped: the checks below
        break;
      case Reader::Step::kEnd:
        reading = false;
        continue;
    }
    const bool turn_over =
        options_.max_bytes_per_call > 0 &&
        static_cast<int64_t>(reader.position()) - start_offset >= options_.max_bytes_per_call;
    const bool stopping = options_.stop && options_.stop->load();
    if (b.points_since_commit >= options_.batch_points || turn_over || stopping) {
      if (Status s = commit(); !s.ok()) return fail(s);
      if (turn_over || stopping) {
        if (more) *more = true;
        if (Status s = store_.Begin(); !s.ok()) return s;
        break;
      }
      if (Status s = store_.Begin(); !s.ok()) return s;
    }
  }
  const bool paused_early = more && *more;
  if (handler.at_end && !paused_early && reader.status().ok()) {
    if (Status s = (this->*handler.at_end)(run, b); !s.ok()) return fail(s);
  }
  if (!reader.status().ok()) {
    b.totals.errors++;
    b.source.error_count++;
    Status s = store_.InsertError(b.source.source_id, path,
                                  static_cast<int64_t>(reader.position()), 0, "read_failed",
                                  reader.status().message());
    if (!s.ok()) return fail(s);
  }
  if (Status s = commit(); !s.ok()) return fail(s);
  b.totals.bytes = b.source.committed_offset - start_offset;
  const bool paused = more && *more;
  if (!paused && b.source.status == "active" && !b.source.resyncing &&
      b.source.committed_offset < size)
    b.totals.partial_tails++;
  totals->Add(b.totals);
  return Status::Ok();
}

Status FileIngester::Restart(RunState& run, Batch& b, int64_t step, double wall, int64_t offset,
                             std::string detail, const std::vector<int64_t>* series, bool always,
                             std::optional<double> before_wall) {
  Result<int64_t> marked =
      store_.MarkSuperseded(run.run_id(), step, before_wall.value_or(wall), series);
  if (!marked.ok()) return marked.status();
  if (*marked == 0 && !always) return Status::Ok();
  TW_RETURN_IF_ERROR(store_.InsertRunEvent(run.run_id(), b.source.source_id, offset, "restart",
                                           step, wall,
                                           detail + " (" + std::to_string(*marked) +
                                               " earlier points superseded)"));
  b.totals.restarts++;
  // Live max steps changed for the tags at or past the restart step: reload them.
  const int64_t starts = run.starts_;
  auto step_metrics = std::move(run.wandb_.step_metrics);
  TW_RETURN_IF_ERROR(run.Load());
  run.starts_ = starts;
  run.wandb_.step_metrics = std::move(step_metrics);
  return Status::Ok();
}

Result<int64_t> FileIngester::SeriesFor(RunState& run, RunState::Tag& tag, std::string_view name,
                                        Kind kind) {
  int64_t& id = tag.series[RunState::SeriesSlot(kind)];
  if (id == 0) {
    Result<int64_t> made = store_.EnsureSeries(run.run_id(), name, decode::KindName(kind),
                                               tag.plugin.plugin_name, tag.plugin.data_class);
    if (!made.ok()) return made.status();
    id = *made;
  }
  return id;
}

}  // namespace tw::ingest

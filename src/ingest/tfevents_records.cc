// TensorBoard event records into the store: FileIngester's tfevents half (its W&B half is
// wandb_records.cc). An Event's summary values become points of their tag; SessionLog STARTs and
// steps that go back supersede what a resumed writer re-logs.
#include <cmath>

#include "ingest/batch.h"

namespace tw::ingest {

using decode::Kind;

Status FileIngester::ProcessRecord(RunState& run, Batch& b, std::string_view record,
                                   int64_t offset) {
  if (Status s = decode::DecodeEvent(record, &event_); !s.ok()) {
    b.totals.errors++;
    b.source.error_count++;
    return store_.InsertError(b.source.source_id, b.source.path, offset,
                              static_cast<int64_t>(record.size() + 16), "bad_event",
                              "record of " + std::to_string(record.size()) +
                                  " bytes is not a tensorflow.Event: " + s.message());
  }
  const decode::Event& ev = event_;
  auto run_event = [&](std::string_view kind, std::optional<int64_t> step,
                       std::string_view detail) {
    b.totals.run_events++;
    return store_.InsertRunEvent(run.run_id(), b.source.source_id, offset, kind, step,
                                 ev.wall_time, detail);
  };
  if (ev.has_source_metadata)
    TW_RETURN_IF_ERROR(run_event("source_metadata", std::nullopt, ev.source_writer));
  switch (ev.what) {
    case decode::What::kFileVersion:
      return run_event("file_version", std::nullopt, ev.file_version);
    case decode::What::kSessionLog:
      if (ev.session_status == 1) {
        // A START re-opens the run at its step (PyTorch purge_step, TF1 estimators): every
        // point of the run logged before it at that step or later is superseded. The first
        // START of a fresh run supersedes nothing and is no restart.
        const bool later_start = ++run.starts_ > 1;
        TW_RETURN_IF_ERROR(Restart(run, b, ev.step, ev.wall_time, offset,
                                   "SessionLog START at step " + std::to_string(ev.step) +
                                       ": resumed from a checkpoint",
                                   nullptr, later_start));
        return run_event("start", ev.step, "");
      }
      if (ev.session_status == 2) return run_event("stop", ev.step, "");
      if (ev.session_status == 3) return run_event("checkpoint", ev.step, ev.checkpoint_path);
      return Status::Ok();
    case decode::What::kGraphDef:
    case decode::What::kMetaGraphDef:
      b.counters.graphs++;
      b.totals.blobs++;
      return Status::Ok();
    case decode::What::kTaggedRunMetadata:
      b.counters.run_metadata++;
      b.totals.blobs++;
      return Status::Ok();
    case decode::What::kSummary:
      break;
    default:
      return Status::Ok();
  }
  // A step lower than a tag's highest live step, logged after that step was, means a writer
  // went back to a checkpoint (or a new writer re-logs steps in a shared directory). Like
  // TensorBoard's purge of out-of-order steps, only the tags this event re-logs lose their
  // later points: other writers' tags in the same directory are left alone. Comparing wall
  // times keeps two writers that log one tag concurrently from superseding each other: the
  // one read second saw its steps before the other's higher steps were logged. (A SessionLog
  // START, above, supersedes the whole run.)
  std::vector<int64_t> rewound;
  std::string rewound_detail;
  for (const auto& v : ev.values) {
    auto it = run.tags_.find(v.tag);
    const RunState::Tag* t = it == run.tags_.end() ? nullptr : &it->second;
    if (!t || !t->has_step || ev.step >= t->max_step || ev.wall_time <= t->max_step_wall) continue;
    for (int64_t id : t->series)
      if (id) rewound.push_back(id);
    if (rewound_detail.empty())
      rewound_detail = "tag '" + std::string(v.tag) + "' went back from step " +
                       std::to_string(t->max_step) + " to " + std::to_string(ev.step);
  }
  if (!rewound.empty())
    TW_RETURN_IF_ERROR(Restart(run, b, ev.step, ev.wall_time, offset,
                               rewound_detail + ": resumed from a checkpoint or re-logged",
                               &rewound, true));
  int vidx = 0;
  for (const auto& v : ev.values) TW_RETURN_IF_ERROR(ProcessValue(run, b, v, vidx++, offset));
  return Status::Ok();
}

Status FileIngester::ProcessValue(RunState& run, Batch& b, const decode::SummaryValue& v,
                                  int vidx, int64_t offset) {
  auto it = run.tags_.find(v.tag);
  if (it == run.tags_.end()) it = run.tags_.emplace(std::string(v.tag), RunState::Tag{}).first;
  RunState::Tag& tag = it->second;
  if (v.has_metadata) {
    tag.plugin = {std::string(v.plugin_name), v.data_class};
    tag.plugin_known = true;
  }
  decode::Classified& c = classified_;
  if (Status s = decode::Classify(v, event_.strings, tag.plugin_known ? &tag.plugin : nullptr, &c);
      !s.ok()) {
    b.totals.errors++;
    b.source.error_count++;
    return store_.InsertError(b.source.source_id, b.source.path, offset, 0, "bad_value",
                              "tag '" + std::string(v.tag) + "' at step " +
                                  std::to_string(event_.step) + ": " + s.message());
  }
  const int64_t step = event_.step;
  const double wall = event_.wall_time;
  switch (c.kind) {
    case Kind::kScalar:
    case Kind::kHistogram:
    case Kind::kText: {
      Result<int64_t> series = SeriesFor(run, tag, v.tag, c.kind);
      if (!series.ok()) return series.status();
      if (c.kind == Kind::kScalar) {
        TW_RETURN_IF_ERROR(store_.InsertScalar(*series, step, b.source.source_id, offset, vidx,
                                               wall, c.scalar));
        b.totals.CountScalar(c.scalar);
      } else if (c.kind == Kind::kHistogram) {
        TW_RETURN_IF_ERROR(store_.InsertHistogram(*series, step, b.source.source_id, offset, vidx,
                                                  wall, c.histogram));
        b.totals.histograms++;
      } else {
        TW_RETURN_IF_ERROR(
            store_.InsertText(*series, step, b.source.source_id, offset, vidx, wall, c.text));
        b.totals.texts++;
      }
      tag.NoteStep(step, wall);
      b.points_since_commit++;
      return Status::Ok();
    }
    case Kind::kHParamsStart:
      b.totals.hparams += static_cast<int64_t>(c.hparams.size());
      return store_.ReplaceHParams(run.run_id(), c.hparams);
    case Kind::kHParamsOther:
      return Status::Ok();
    case Kind::kImage:
      b.counters.images++;
      b.totals.blobs++;
      return Status::Ok();
    case Kind::kAudio:
      b.counters.audio++;
      b.totals.blobs++;
      return Status::Ok();
    case Kind::kOtherTensor:
      b.counters.other_tensors++;
      b.totals.blobs++;
      return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace tw::ingest

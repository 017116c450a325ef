#include "ingest/tfevents_ingester.h"

#include <cmath>

namespace tw::ingest {

using decode::Kind;

Status TfEventsIngester::Record(PointSink& sink, std::string_view record, int64_t offset) {
  if (Status s = decode::DecodeEvent(record, &event_); !s.ok())
    return sink.Problem(offset, static_cast<int64_t>(record.size() + 16), "bad_event",
                        "record of " + std::to_string(record.size()) +
                            " bytes is not a tensorflow.Event: " + s.message());
  const decode::Event& ev = event_;
  auto run_event = [&](std::string_view kind, std::optional<int64_t> step,
                       std::string_view detail) {
    return sink.Event(kind, step, ev.wall_time, offset, std::string(detail));
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
        const bool later_start = sink.NoteStart() > 1;
        TW_RETURN_IF_ERROR(sink.RestartRun(ev.step, ev.wall_time, offset,
                                           "SessionLog START at step " + std::to_string(ev.step) +
                                               ": resumed from a checkpoint",
                                           later_start));
        return run_event("start", ev.step, "");
      }
      if (ev.session_status == 2) return run_event("stop", ev.step, "");
      if (ev.session_status == 3) return run_event("checkpoint", ev.step, ev.checkpoint_path);
      return Status::Ok();
    case decode::What::kGraphDef:
    case decode::What::kMetaGraphDef:
      sink.CountBlob(PointSink::Blob::kGraph);
      return Status::Ok();
    case decode::What::kTaggedRunMetadata:
      sink.CountBlob(PointSink::Blob::kRunMetadata);
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
  tags_.clear();
  for (const auto& v : ev.values) tags_.push_back(v.tag);
  TW_RETURN_IF_ERROR(sink.RewindIfBack(tags_, ev.step, ev.wall_time, offset, "tag", "step",
                                       "resumed from a checkpoint or re-logged"));
  int vidx = 0;
  for (const auto& v : ev.values) TW_RETURN_IF_ERROR(Value(sink, v, vidx++, offset));
  return Status::Ok();
}

Status TfEventsIngester::Value(PointSink& sink, const decode::SummaryValue& v, int vidx,
                               int64_t offset) {
  if (v.has_metadata) sink.SetPlugin(v.tag, {std::string(v.plugin_name), v.data_class});
  decode::Classified& c = classified_;
  if (Status s = decode::Classify(v, event_.strings, sink.Plugin(v.tag), &c); !s.ok())
    return sink.Problem(offset, 0, "bad_value",
                        "tag '" + std::string(v.tag) + "' at step " +
                            std::to_string(event_.step) + ": " + s.message());
  const int64_t step = event_.step;
  const double wall = event_.wall_time;
  switch (c.kind) {
    case Kind::kScalar: return sink.Scalar(v.tag, step, wall, c.scalar, offset, vidx);
    case Kind::kHistogram: return sink.Histogram(v.tag, step, wall, c.histogram, offset, vidx);
    case Kind::kText: return sink.Text(v.tag, step, wall, c.text, offset, vidx);
    case Kind::kHParamsStart: return sink.ReplaceHParams(c.hparams);
    case Kind::kHParamsOther:
      return Status::Ok();
    case Kind::kImage: sink.CountBlob(PointSink::Blob::kImage); return Status::Ok();
    case Kind::kAudio: sink.CountBlob(PointSink::Blob::kAudio); return Status::Ok();
    case Kind::kOtherTensor: sink.CountBlob(PointSink::Blob::kOther); return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace tw::ingest

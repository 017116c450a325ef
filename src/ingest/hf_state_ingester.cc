#include "ingest/hf_state_ingester.h"

#include <cmath>

#include "base/json.h"

namespace tw::ingest {

using decode::JsonNode;

Status HfStateIngester::Document(PointSink& sink, const JsonNode& state, double wall) {
  if (state.type != JsonNode::Type::kObject)
    return sink.Problem(0, 0, "bad_document", "not a JSON object: not an HF trainer state");
  const JsonNode* history = state.Find("log_history");
  if (!history || history->type != JsonNode::Type::kArray)
    return sink.Problem(0, 0, "bad_document",
                        "no log_history array: not an HF trainer state");
  store::RunInfo info;
  info.format = "hf_trainer";
  TW_RETURN_IF_ERROR(sink.Info(info));
  for (const char* key : {"best_metric", "best_model_checkpoint", "global_step"}) {
    const JsonNode* v = state.Find(key);
    if (!v || v->type == JsonNode::Type::kNull) continue;
    if (v->type == JsonNode::Type::kString)
      TW_RETURN_IF_ERROR(sink.RunValue(key, JsonQuote(v->text)));
    else if (v->type == JsonNode::Type::kNumber)
      TW_RETURN_IF_ERROR(sink.RunValue(key, JsonNumber(v->number)));
  }
  int64_t skipped = 0;
  for (size_t i = 0; i < history->array.size(); ++i) {
    const JsonNode& entry = history->array[i];
    const JsonNode* step = entry.Find("step");
    if (entry.type != JsonNode::Type::kObject || !step ||
        step->type != JsonNode::Type::kNumber || !std::isfinite(step->number) ||
        step->number < 0 || step->number > 9e15 || step->number != std::floor(step->number)) {
      ++skipped;
      continue;
    }
    const auto at = static_cast<int64_t>(step->number);
    int vidx = 0;
    for (const auto& [key, value] : entry.object) {
      ++vidx;
      if (key == "step" || value.type != JsonNode::Type::kNumber) continue;
      // Stored already from an earlier save of the same history.
      const std::optional<int64_t> max = sink.MaxStep(key);
      if (max && at <= *max) continue;
      TW_RETURN_IF_ERROR(sink.Scalar(key, at, wall, value.number, static_cast<int64_t>(i), vidx));
    }
  }
  if (skipped > 0)
    TW_RETURN_IF_ERROR(sink.Problem(0, 0, "bad_entry",
                                    std::to_string(skipped) +
                                        " log_history entries have no whole, non-negative "
                                        "\"step\"; skipped"));
  return Status::Ok();
}

}  // namespace tw::ingest

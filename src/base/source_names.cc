#include "base/source_names.h"

#include <filesystem>

namespace tw::sources {

namespace {
// "checkpoint-1500": where the HF Trainer saves.
bool IsCheckpointDir(std::string_view name) {
  constexpr std::string_view kPrefix = "checkpoint-";
  if (!name.starts_with(kPrefix) || name.size() == kPrefix.size()) return false;
  for (char c : name.substr(kPrefix.size()))
    if (c < '0' || c > '9') return false;
  return true;
}
bool AllOf(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
bool Digit(char c) { return c >= '0' && c <= '9'; }
bool Hex(char c) { return Digit(c) || (c >= 'a' && c <= 'f'); }

// Where "/metrics/" follows "<digits>/<32 hex>": the run directory's end, or npos.
size_t MlflowRunEnd(std::string_view path) {
  for (size_t at = path.find("/metrics/"); at != std::string_view::npos;
       at = path.find("/metrics/", at + 1)) {
    const std::string_view before = path.substr(0, at);
    const size_t run_slash = before.rfind('/');
    if (run_slash == std::string_view::npos || run_slash == 0) continue;
    const std::string_view run = before.substr(run_slash + 1);
    const size_t exp_slash = before.rfind('/', run_slash - 1);
    const std::string_view exp =
        before.substr(exp_slash == std::string_view::npos ? 0 : exp_slash + 1,
                      run_slash - (exp_slash == std::string_view::npos ? 0 : exp_slash + 1));
    if (run.size() == 32 && AllOf(run, Hex) && AllOf(exp, Digit) &&
        at + 9 < path.size() && path.back() != '/')
      return at;
  }
  return std::string_view::npos;
}

}  // namespace

std::string_view MlflowRunDir(std::string_view path) {
  const size_t end = MlflowRunEnd(path);
  return end == std::string_view::npos ? std::string_view() : path.substr(0, end);
}

std::string_view MlflowMetricKey(std::string_view path) {
  const size_t end = MlflowRunEnd(path);
  return end == std::string_view::npos ? std::string_view() : path.substr(end + 9);
}

SourceKind KindOfPath(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view name = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
  if (name.ends_with(".wandb")) return SourceKind::kWandbLog;
  if (name == "wandb-history.jsonl" || name == "wandb-events.jsonl") return SourceKind::kWandbJsonl;
  if (name == "output.log" && slash != std::string_view::npos &&
      path.substr(0, slash).ends_with("/files"))
    return SourceKind::kConsole;
  if (name == "trainer_state.json") return SourceKind::kHfState;
  if (name == "metrics.csv" || name == "results.csv") return SourceKind::kCsv;
  if (MlflowRunEnd(path) != std::string_view::npos) return SourceKind::kMlflowMetric;
  if (name == "mlflow.db") return SourceKind::kMlflowDb;
  if (name.find("tfevents") != std::string_view::npos && !name.ends_with(".profile-empty"))
    return SourceKind::kTfEvents;
  return SourceKind::kNone;
}

std::string RunDirOf(const std::string& path, SourceKind kind) {
  if (kind == SourceKind::kMlflowMetric) return std::string(MlflowRunDir(path));
  const std::filesystem::path p(path);
  if (kind == SourceKind::kMlflowDb) return path;
  if (kind == SourceKind::kConsole) {
    std::filesystem::path run = p;
    run.replace_extension();
    return run.native();
  }
  std::filesystem::path dir = p.parent_path();
  if (kind == SourceKind::kWandbJsonl && dir.filename() == "files") dir = dir.parent_path();
  if (kind == SourceKind::kHfState && IsCheckpointDir(dir.filename().native())) dir = dir.parent_path();
  return dir.native();
}

}  // namespace tw::sources

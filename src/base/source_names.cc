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
}  // namespace

SourceKind KindOfPath(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view name = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
  if (name.ends_with(".wandb")) return SourceKind::kWandbLog;
  if (name == "wandb-history.jsonl" || name == "wandb-events.jsonl") return SourceKind::kWandbJsonl;
  if (name == "output.log" && slash != std::string_view::npos &&
      path.substr(0, slash).ends_with("/files"))
    return SourceKind::kConsole;
  if (name == "trainer_state.json") return SourceKind::kHfState;
  if (name.find("tfevents") != std::string_view::npos && !name.ends_with(".profile-empty"))
    return SourceKind::kTfEvents;
  return SourceKind::kNone;
}

std::string RunDirOf(const std::string& path, SourceKind kind) {
  const std::filesystem::path p(path);
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

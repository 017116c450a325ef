#include "base/source_names.h"

#include <filesystem>

namespace tw::sources {

bool IsWandbLog(std::string_view path) { return path.ends_with(".wandb"); }

bool IsWandbJsonl(std::string_view path) {
  const std::string_view name = path.substr(path.rfind('/') + 1);
  return name == "wandb-history.jsonl" || name == "wandb-events.jsonl";
}

std::string RunDirOf(const std::string& path) {
  const std::filesystem::path p(path);
  std::filesystem::path dir = p.parent_path();
  if (IsWandbJsonl(path) && dir.filename() == "files") dir = dir.parent_path();
  return dir.native();
}

bool IsEventFileName(std::string_view name) {
  if (IsWandbLog(name) || IsWandbJsonl(name)) return true;
  return name.find("tfevents") != std::string_view::npos && !name.ends_with(".profile-empty");
}

}  // namespace tw::sources

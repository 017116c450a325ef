#include "ingest/mlflow_ingester.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "base/file_io.h"
#include "base/json.h"
#include "decode/console_profiles.h"
#include "decode/flat_yaml.h"
#include "decode/json_value.h"

namespace tw::ingest {

namespace fs = std::filesystem;

namespace {

// A run's side files are a few bytes each; more than this many, or larger, is not MLflow's.
constexpr size_t kMaxSideFiles = 4096;
constexpr size_t kMaxSideBytes = 64 << 10;

// Every file below `dir` (a key's '/' as folders), as (key, first bytes); symlinks not
// followed, anything not a regular file skipped (InputFile refuses it).
std::vector<std::pair<std::string, std::string>> KeyFiles(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end && out.size() < kMaxSideFiles; it.increment(ec)) {
    if (it->is_symlink(ec) || !it->is_regular_file(ec)) continue;
    Result<InputFile> f = InputFile::Open(it->path().native());
    if (!f.ok()) continue;
    out.emplace_back(it->path().lexically_relative(dir).native(), f->Head(kMaxSideBytes));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadSmall(const std::string& path) {
  Result<InputFile> f = InputFile::Open(path);
  return f.ok() ? f->Head(kMaxSideBytes) : std::string();
}

const char* StatusName(int64_t s) {
  switch (s) {
    case 1: return "RUNNING";
    case 2: return "SCHEDULED";
    case 3: return "FINISHED";
    case 4: return "FAILED";
    case 5: return "KILLED";
  }
  return nullptr;
}

}  // namespace

model::HParam MlflowParam(const std::string& key, const std::string& text) {
  model::HParam p;
  p.key = key;
  double d = 0;
  if (decode::ParseJsonNumber(text, &d) && std::isfinite(d) && text != "true" && text != "false") {
    p.type = model::HParam::Type::kNumber;
    p.number = d;
  } else {
    p.type = model::HParam::Type::kString;
    p.text = text;
  }
  return p;
}

Status MlflowIngester::Line(PointSink& sink, std::string_view key, std::string_view line,
                            int64_t offset) {
  // "<timestamp> <value> <step>", or "<timestamp> <value>" (step 0) before MLflow 1.0.
  std::vector<std::string_view> fields;
  for (size_t at = 0; at <= line.size() && fields.size() <= 3;) {
    const size_t sp = std::min(line.find(' ', at), line.size());
    fields.push_back(line.substr(at, sp - at));
    at = sp + 1;
  }
  const bool shaped = fields.size() == 2 || fields.size() == 3;
  const std::optional<double> ts = shaped ? decode::ParseConsoleNumber(fields[0]) : std::nullopt;
  const std::optional<double> value = shaped ? decode::ParseConsoleNumber(fields[1]) : std::nullopt;
  const std::optional<double> step =
      fields.size() == 3 ? decode::ParseConsoleNumber(fields[2]) : std::optional<double>(0);
  if (!ts || !value || !step || !std::isfinite(*ts) || !std::isfinite(*step) ||
      std::fabs(*step) > 9e15 || *step != std::floor(*step))
    return sink.Problem(offset, static_cast<int64_t>(line.size()), "bad_line",
                        "not an MLflow metric line (\"<timestamp> <value> <step>\"); skipped");
  return sink.Scalar(key, static_cast<int64_t>(*step), *ts / 1000.0, *value, offset, 0);
}

Status MlflowIngester::RunFiles(PointSink& sink, const std::string& run_dir) {
  store::RunInfo info;
  info.format = "mlflow";
  for (const auto& [key, json] : decode::ParseFlatYaml(ReadSmall(run_dir + "/meta.yaml"))) {
    decode::JsonNode v;
    if (!decode::ParseJson(json, &v).ok()) continue;
    const bool number = v.type == decode::JsonNode::Type::kNumber;
    if (key == "run_id" && v.type == decode::JsonNode::Type::kString) info.external_id = v.text;
    if (key == "run_name" && v.type == decode::JsonNode::Type::kString && !v.text.empty())
      info.display_name = v.text;
    if (key == "start_time" && number) info.start_time = v.number / 1000.0;
    if (key == "end_time" && number)
      TW_RETURN_IF_ERROR(sink.RunValue("mlflow.end_time", JsonNumber(v.number / 1000.0)));
    if (key == "status" && number)
      if (const char* name = StatusName(static_cast<int64_t>(v.number)))
        TW_RETURN_IF_ERROR(sink.RunValue("mlflow.status", JsonQuote(name)));
  }
  const std::string exp_meta = fs::path(run_dir).parent_path().native() + "/meta.yaml";
  for (const auto& [key, json] : decode::ParseFlatYaml(ReadSmall(exp_meta))) {
    decode::JsonNode v;
    if (key == "name" && decode::ParseJson(json, &v).ok() &&
        v.type == decode::JsonNode::Type::kString)
      info.project = v.text;
  }
  for (const auto& [key, text] : KeyFiles(run_dir + "/tags")) {
    if (key == "mlflow.runName" && !text.empty()) info.display_name = text;
    TW_RETURN_IF_ERROR(sink.ConfigValue(key, JsonQuote(text)));
  }
  for (const auto& [key, text] : KeyFiles(run_dir + "/params"))
    TW_RETURN_IF_ERROR(sink.HParam(MlflowParam(key, text)));
  return sink.Info(info);
}

}  // namespace tw::ingest

#include "ingest/ingest.h"

#include <filesystem>
#include <system_error>

#include "ingest/discover.h"
#include "ingest/runs.h"

namespace tw::ingest {

namespace fs = std::filesystem;

namespace {

struct Job {
  std::string root;
  DiscoveredRun run;
};

// Resolves a command-line path into (root, runs). A file is its own run "." under its
// directory; a file that is no source by its name is read as a console log (added to
// `options`' console globs), a run named by its name without the extension.
Status Plan(const std::string& path, std::vector<Job>* jobs, Summary* summary,
            IngestOptions* options) {
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec || !fs::exists(abs, ec)) {
    summary->warnings.push_back(path + ": no such file or directory");
    return Status::Ok();
  }
  if (fs::is_regular_file(abs, ec)) {
    if (KindOf(abs.native(), *options) == sources::SourceKind::kNone)
      options->console_globs.push_back(abs.native());
    if (KindOf(abs.native(), *options) == sources::SourceKind::kConsole) {
      jobs->push_back({abs.parent_path().native(), {abs.stem().native(), {abs.native()}}});
      return Status::Ok();
    }
    // mlflow.db holds many runs, named below the file's own name.
    const bool database = KindOf(abs.native(), *options) == sources::SourceKind::kMlflowDb;
    jobs->push_back({abs.parent_path().native(),
                     {database ? abs.filename().native() : ".", {abs.native()}}});
    return Status::Ok();
  }
  Result<std::vector<DiscoveredRun>> runs =
      DiscoverRuns(abs.native(), &summary->warnings, options->console_globs);
  if (!runs.ok()) {
    summary->warnings.push_back(runs.status().message());
    return Status::Ok();
  }
  if (runs->empty()) summary->warnings.push_back(path + ": no event files found");
  for (auto& r : *runs) jobs->push_back({abs.native(), std::move(r)});
  return Status::Ok();
}

}  // namespace

Status IngestPaths(store::Store& store, const std::vector<std::string>& paths,
                   const IngestOptions& given, Summary* summary,
                   const std::function<void(const Progress&)>& on_progress) {
  std::vector<Job> jobs;
  IngestOptions options = given;
  for (const auto& p : paths) TW_RETURN_IF_ERROR(Plan(p, &jobs, summary, &options));

  Progress progress;
  for (const auto& j : jobs) {
    for (const auto& f : j.run.files) {
      std::error_code ec;
      auto size = fs::file_size(f, ec);
      if (!ec) progress.bytes_total += static_cast<int64_t>(size);
      progress.files_total++;
    }
  }
  FileIngester ingester(store, options);
  for (const auto& j : jobs) {
    Result<int64_t> run_id = ResolveRun(store, j.root, j.run.name, j.run.files);
    if (!run_id.ok()) return run_id.status();
    RunState run(store, *run_id, j.root);
    TW_RETURN_IF_ERROR(run.Load());
    summary->runs++;
    for (const auto& f : j.run.files) {
      const int64_t bytes_before = progress.bytes_done;
      Totals before = summary->totals;
      auto tick = [&](int64_t file_bytes) {
        progress.bytes_done = bytes_before + file_bytes;
        if (on_progress) on_progress(progress);
      };
      TW_RETURN_IF_ERROR(ingester.IngestFile(run, f, &summary->totals, tick));
      summary->files++;
      progress.files_done++;
      progress.points += summary->totals.points() - before.points();
      std::error_code ec;
      auto size = fs::file_size(f, ec);
      progress.bytes_done = bytes_before + (ec ? 0 : static_cast<int64_t>(size));
      if (on_progress) on_progress(progress);
    }
  }
  return Status::Ok();
}

}  // namespace tw::ingest

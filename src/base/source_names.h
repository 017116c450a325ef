// Which files are sources, by their names alone: the one place that says it, below every stage
// that asks (watch/ decides what to hand on, ingest/ how to read it).
#pragma once

#include <string>
#include <string_view>

namespace tw::sources {

// A file trainwatch reads: a TensorBoard event file (basename contains "tfevents";
// "*.profile-empty" markers are skipped), a W&B transaction log, or a pre-0.10 W&B JSON-lines
// history or events file.
bool IsEventFileName(std::string_view basename);

// How a file is read, by its name: a W&B transaction log (*.wandb), the JSON lines of a W&B
// run from before SDK 0.10 (wandb-history.jsonl, wandb-events.jsonl), or tfevents.
bool IsWandbLog(std::string_view path);
bool IsWandbJsonl(std::string_view path);

// The run directory of a source file: its directory, except for the JSON lines that some old
// SDKs wrote into the run's files/ folder.
std::string RunDirOf(const std::string& path);

}  // namespace tw::sources

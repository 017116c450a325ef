// Finds runs under a root, TensorBoard's way: a run is a directory that directly holds
// event files (basename contains "tfevents"; "*.profile-empty" markers are skipped) or a
// W&B transaction log (*.wandb: its directory, wandb/run-<time>-<id>/, is the run), named
// by its path relative to the root ("." for the root itself). A W&B run from before SDK
// 0.10 has wandb-history.jsonl and wandb-events.jsonl instead; they are read only where the
// run has no .wandb.
#pragma once

#include <string>
#include <vector>

#include "base/source_names.h"
#include "base/status.h"

namespace tw::ingest {

struct DiscoveredRun {
  std::string name;                // relative to the root; "." for the root
  std::vector<std::string> files;  // absolute paths, in name order
};

// Walks `root` (absolute, canonical) recursively. Unreadable subdirectories are skipped and
// reported in `warnings`, as are paths named like event files that are not regular files (a
// FIFO); symlinked directories are not followed (no loops).
// `console_globs`: files matching one are console logs (IngestOptions::console_globs).
Result<std::vector<DiscoveredRun>> DiscoverRuns(const std::string& root,
                                                std::vector<std::string>* warnings,
                                                const std::vector<std::string>& console_globs = {});

}  // namespace tw::ingest

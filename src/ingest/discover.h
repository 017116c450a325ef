// Finds runs under a root, TensorBoard's way: a run is a directory that directly holds
// event files (basename contains "tfevents"; "*.profile-empty" markers are skipped) or a
// W&B transaction log (*.wandb: its directory, wandb/run-<time>-<id>/, is the run), named
// by its path relative to the root ("." for the root itself).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace tw::ingest {

struct DiscoveredRun {
  std::string name;                // relative to the root; "." for the root
  std::vector<std::string> files;  // absolute paths, in name order
};

bool IsEventFileName(std::string_view basename);

// Walks `root` (absolute, canonical) recursively. Unreadable subdirectories are skipped
// and reported in `warnings`; symlinked directories are not followed (no loops).
Result<std::vector<DiscoveredRun>> DiscoverRuns(const std::string& root,
                                                std::vector<std::string>* warnings);

}  // namespace tw::ingest

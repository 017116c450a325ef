// The side files of a W&B run from before SDK 0.10: files/config.yaml (or config.yaml) and
// wandb-summary.json. Unlike the history they are rewritten whole, not appended to, so they
// are read whole, whenever the run's history is read.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tw::wandb {

using KeyValues = std::vector<std::pair<std::string, std::string>>;  // key, value_json

// W&B's config.yaml: top-level keys, each with a `value:` (under an old `desc:`, or alone as
// the core writes it). Scalar values become JSON (numbers, true/false, null, strings); nested
// values and `_wandb` are left out, as is `wandb_version`. Not a YAML parser: the two layouts
// W&B writes, read line by line.
KeyValues ParseConfigYaml(const std::string& text);

// wandb-summary.json's top-level keys with their values as JSON text (NaN and Infinity bare).
Result<KeyValues> ParseSummaryJson(const std::string& text);

// The config.yaml and wandb-summary.json of the run in `run_dir` (looked for in the directory
// and in its files/), "" for each that is not there.
struct LegacyFiles {
  std::string config_yaml, summary_json;
};
LegacyFiles ReadLegacyFiles(const std::string& run_dir);

}  // namespace tw::wandb

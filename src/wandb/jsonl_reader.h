// Lines of the JSON-lines files older W&B SDKs (before 0.10, 2020) wrote instead of a `.wandb`
// log: wandb-history.jsonl (one object per wandb.log row) and wandb-events.jsonl (system
// metrics). Read as lines (read/lines.h): a line is returned once its newline is written.
#pragma once

#include "read/lines.h"

namespace tw::wandb::jsonl {

using read::LineReader;
using read::Problem;
using read::ProblemKind;
using read::ScanState;

}  // namespace tw::wandb::jsonl

// Which run row a directory of event files belongs to.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "store/store.h"

namespace tw::ingest {

// The run (root, name), created if new. A new name whose files trainwatch already knows
// (same device and inode) from a run whose directory is gone is that run renamed: the run
// row is renamed and keeps its points, rather than a second copy being ingested.
Result<int64_t> ResolveRun(store::Store& store, const std::string& root, const std::string& name,
                           const std::vector<std::string>& files);

}  // namespace tw::ingest

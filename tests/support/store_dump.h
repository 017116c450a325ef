// A store's content as sorted text lines, independent of row ids, so two stores (one ingest
// in pieces, one ingest in one go) can be compared for equality.
#pragma once

#include <string>
#include <vector>

#include "store/db.h"

namespace tw::testing {

// Every scalar, histogram and text point with its run, tag, file path, offset, step, wall
// time, value and superseded flag; plus hparams and run events.
std::vector<std::string> DumpStore(store::Db& db);

// Just the live scalar points: "run|tag|step|value|class".
std::vector<std::string> DumpLiveScalars(store::Db& db);

}  // namespace tw::testing

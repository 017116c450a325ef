// A store's content as sorted text lines, independent of row ids, so two stores (one ingest
// in pieces, one ingest in one go) can be compared for equality.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/db.h"

namespace tw::testing {

// Every scalar, histogram and text point with its run, tag, file path, offset, step, wall
// time, value and superseded flag; plus hparams and run events.
std::vector<std::string> DumpStore(store::Db& db);

// Just the live scalar points: "run|tag|step|value|class".
std::vector<std::string> DumpLiveScalars(store::Db& db);
// The same from the store at `db_path` on a read-only connection; nullopt while it cannot be
// read (a daemon may still be creating it), so tests can poll it.
std::optional<std::vector<std::string>> DumpLiveScalars(const std::string& db_path);

// The first column of the first row of `sql` on a read-only connection to the store at
// `db_path`, as an integer; -1 when the store or the query fails (a daemon may still be
// creating it), so tests can poll it.
int64_t QueryInt(const std::string& db_path, const std::string& sql);
// Rows of `sql` on a read-only connection, as "a|b|c" (NULL for a null), in the order the query
// gives; nullopt while the store cannot be read (not created or migrated yet).
std::optional<std::vector<std::string>> QueryRows(const std::string& db_path, const std::string& sql);

}  // namespace tw::testing

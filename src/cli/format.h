// Rendering query results for people (aligned table) and programs (CSV, JSON lines).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/db.h"

namespace tw::cli {

enum class Format { kTable, kCsv, kJson };
bool ParseFormat(const std::string& s, Format* out);

// Steps `stmt` to completion and prints every row. Returns the number of rows.
Result<int64_t> PrintRows(store::Stmt& stmt, Format format, std::ostream& out);

std::string HumanBytes(double bytes);
std::string HumanCount(int64_t n);

}  // namespace tw::cli

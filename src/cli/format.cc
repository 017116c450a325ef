#include "cli/format.h"

#include "base/json.h"
#include "base/log.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace tw::cli {
namespace {

std::string CellText(store::Stmt& s, int col) {
  switch (s.ColumnType(col)) {
    case SQLITE_NULL: return "NULL";
    case SQLITE_INTEGER: return std::to_string(s.Int(col));
    case SQLITE_FLOAT: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", s.Real(col));
      return buf;
    }
    case SQLITE_BLOB: return "<blob " + std::to_string(sqlite3_column_bytes(s.raw(), col)) + " B>";
    default: return s.Text(col);
  }
}

std::string CsvQuote(const std::string& v) {
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string JsonCell(store::Stmt& s, int col) {
  switch (s.ColumnType(col)) {
    case SQLITE_NULL: return "null";
    case SQLITE_INTEGER: return std::to_string(s.Int(col));
    case SQLITE_FLOAT: {
      double d = s.Real(col);
      if (!std::isfinite(d)) return d > 0 ? "\"+inf\"" : "\"-inf\"";  // JSON has no Inf
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", d);
      return buf;
    }
    case SQLITE_BLOB: return "null";
    default: return JsonQuote(s.Text(col));
  }
}

}  // namespace

bool ParseFormat(const std::string& s, Format* out) {
  if (s == "table") *out = Format::kTable;
  else if (s == "csv") *out = Format::kCsv;
  else if (s == "json") *out = Format::kJson;
  else return false;
  return true;
}

Result<int64_t> PrintRows(store::Stmt& stmt, Format format, std::ostream& out) {
  const int cols = stmt.ColumnCount();
  std::vector<std::string> names;
  for (int c = 0; c < cols; ++c) names.emplace_back(stmt.ColumnName(c));
  std::vector<std::vector<std::string>> table;  // only for kTable, which must see widths
  int64_t rows = 0;
  if (format == Format::kCsv) {
    for (int c = 0; c < cols; ++c) out << (c ? "," : "") << CsvQuote(names[c]);
    out << '\n';
  }
  for (;;) {
    Result<bool> row = stmt.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    ++rows;
    if (format == Format::kTable) {
      // A table is for a terminal: a name's control characters (an escape sequence, a newline)
      // are shown escaped, as in log lines, not sent to it. CSV and JSON keep the bytes.
      std::vector<std::string> r;
      for (int c = 0; c < cols; ++c) r.push_back(log::Escape(CellText(stmt, c)));
      table.push_back(std::move(r));
    } else if (format == Format::kCsv) {
      for (int c = 0; c < cols; ++c)
        out << (c ? "," : "") << (stmt.ColumnType(c) == SQLITE_NULL ? "" : CsvQuote(CellText(stmt, c)));
      out << '\n';
    } else {
      out << '{';
      for (int c = 0; c < cols; ++c)
        out << (c ? "," : "") << JsonQuote(names[c]) << ':' << JsonCell(stmt, c);
      out << "}\n";
    }
  }
  if (format == Format::kTable) {
    for (auto& n : names) n = log::Escape(n);
    std::vector<size_t> width(cols);
    for (int c = 0; c < cols; ++c) width[c] = names[c].size();
    for (const auto& r : table)
      for (int c = 0; c < cols; ++c) width[c] = std::max(width[c], r[c].size());
    auto line = [&](const std::vector<std::string>& r) {
      for (int c = 0; c < cols; ++c) {
        out << (c ? "  " : "") << r[c];
        if (c + 1 < cols) out << std::string(width[c] - r[c].size(), ' ');
      }
      out << '\n';
    };
    line(names);
    std::vector<std::string> rule;
    for (int c = 0; c < cols; ++c) rule.emplace_back(width[c], '-');
    line(rule);
    for (const auto& r : table) line(r);
    out << "(" << rows << (rows == 1 ? " row" : " rows") << ")\n";
  }
  return rows;
}

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string HumanCount(int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace tw::cli

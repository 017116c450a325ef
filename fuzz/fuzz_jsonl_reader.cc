// libFuzzer target: arbitrary bytes as a W&B JSON-lines file (wandb-history.jsonl). The first
// two bytes pick the reader's chunk size and a cut; the rest is the file. Checks that the
// LineReader returns exactly the complete lines (CR stripped, empty ones skipped) at their
// offsets, that the file read in two goes (the second part appended after the first read, the
// second reader starting at the first's position) returns the same lines, and parses each
// line as ingest does.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "decode/json_value.h"
#include "fuzz_util.h"
#include "read/lines.h"

namespace {

using tw::read::LineReader;
using Lines = std::vector<std::pair<uint64_t, std::string>>;

// What a reader must return for `bytes`: each newline-terminated, non-empty line.
Lines Expected(std::string_view bytes, uint64_t* end) {
  Lines out;
  size_t start = 0;
  for (size_t nl; (nl = bytes.find('\n', start)) != std::string_view::npos; start = nl + 1) {
    std::string_view line = bytes.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) out.emplace_back(start, std::string(line));
  }
  *end = start;
  return out;
}

Lines Read(const std::string& path, uint64_t offset, size_t chunk, uint64_t* position) {
  LineReader r(path, offset, {}, chunk);
  tw::fuzz::Check(r.Open().ok(), "open");
  Lines out;
  for (;;) {
    const LineReader::Step step = r.Next();
    if (step == LineReader::Step::kEnd) break;
    if (step == LineReader::Step::kYield) continue;  // a chunk of blank lines: the turn's budget
    tw::fuzz::Check(step == LineReader::Step::kRecord, "no line here is too long");
    out.emplace_back(r.record_offset(), std::string(r.record()));
  }
  tw::fuzz::Check(r.status().ok(), "read");
  *position = r.position();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t chunk = 1 + data[0] % 64;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  const size_t cut = data[1] * bytes.size() / 256;

  uint64_t want_end;
  const Lines want = Expected(bytes, &want_end);
  tw::fuzz::MemFile whole;
  whole.Append(bytes);
  uint64_t end;
  tw::fuzz::Check(Read(whole.path(), 0, chunk, &end) == want, "one read returns the complete lines");
  tw::fuzz::Check(end == want_end, "one read stops after the last newline");

  tw::fuzz::MemFile growing;
  growing.Append(bytes.substr(0, cut));
  uint64_t first_end, second_end;
  Lines two = Read(growing.path(), 0, chunk, &first_end);
  growing.Append(bytes.substr(cut));
  const Lines rest = Read(growing.path(), first_end, chunk, &second_end);
  two.insert(two.end(), rest.begin(), rest.end());
  tw::fuzz::Check(two == want && second_end == want_end, "two reads equal one read");

  tw::decode::JsonNode row;
  for (const auto& [offset, line] : want) (void)tw::decode::ParseJson(line, &row);
  return 0;
}

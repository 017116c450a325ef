// libFuzzer target: arbitrary bytes as a `.wandb` log. Checks the header, decides the block
// origin as FileReader does, runs the Scanner over the bytes (in one window, and again cut in
// two with the first read's position and state carried over, which must return the same
// records), and decodes every record it returns, and the raw input, as a
// wandb_internal.Record, parsing each value_json.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "wandb/record.h"
#include "wandb/value.h"
#include "wandb/log_reader.h"

namespace {

using tw::wandb::BlockOrigin;
using tw::wandb::Scanner;

void Decode(std::string_view record) {
  tw::wandb::Record r;
  if (!tw::wandb::DecodeRecord(record, &r).ok()) return;
  std::string name;
  tw::decode::JsonNode node;
  tw::decode::Histogram h;
  for (const auto& item : r.items) {
    tw::wandb::ItemName(r, item, &name);
    double v;
    if (tw::decode::ParseJsonNumber(item.value_json, &v)) continue;
    if (!tw::decode::ParseJson(item.value_json, &node).ok()) continue;
    if (tw::wandb::ClassifyValue(node) == tw::wandb::ValueKind::kHistogram)
      (void)tw::wandb::ParseHistogram(node, &h);
  }
}

struct Out {
  std::vector<std::string> records;
  uint64_t position = 0;
  tw::wandb::ScanState state;
  BlockOrigin origin = BlockOrigin::kUnknown;  // as given, or as a chunk settled it
};

Out Scan(std::string_view window, uint64_t base, tw::wandb::ScanState state, BlockOrigin origin) {
  Out out;
  Scanner s(window, base, state, origin);
  for (;;) {
    const auto step = s.Next();
    if (step == Scanner::Step::kNeedMore) break;
    if (step == Scanner::Step::kRecord) out.records.emplace_back(s.record());
  }
  out.position = s.position();
  out.state = s.state();
  out.origin = s.origin();
  if (out.position > base + window.size()) std::abort();  // never past the bytes given
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Decode(bytes);
  int version = -1;
  if (!tw::wandb::CheckFileHeader(bytes, &version).ok() || size < tw::wandb::kFileHeaderSize)
    return 0;
  const BlockOrigin origin = size > tw::wandb::kBlockSize
                                 ? tw::wandb::DetectBlockOrigin(bytes.substr(tw::wandb::kBlockSize), size)
                                 : BlockOrigin::kUnknown;
  const uint64_t base = tw::wandb::kFileHeaderSize;
  const Out whole = Scan(bytes.substr(base), base, {}, origin);
  for (const auto& r : whole.records) Decode(r);
  // The same bytes read in two goes, cut where the input's last byte says, the second read
  // starting at the first's position with its state and the origin it ended with: the
  // reader's promise is that this returns exactly what one read returns, damage or not.
  const uint64_t cut = base + data[size - 1] * (size - base) / 256;
  Out first = Scan(bytes.substr(base, cut - base), base, {}, origin);
  const Out rest = Scan(bytes.substr(first.position), first.position, first.state, first.origin);
  first.records.insert(first.records.end(), rest.records.begin(), rest.records.end());
  if (first.records != whole.records || rest.position != whole.position) std::abort();
  return 0;
}

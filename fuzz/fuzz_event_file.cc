// libFuzzer target: arbitrary bytes as an event file. Runs the TFRecord scanner (with resync)
// over them, then decodes and classifies every record that passes both CRCs, and also decodes
// the raw input as an Event directly (so the decoder is reached without valid framing).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "decode/classify.h"
#include "decode/event.h"
#include "tfrecord/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  tw::decode::Event ev;
  tw::decode::Classified c;
  auto decode = [&](std::string_view record) {
    if (!tw::decode::DecodeEvent(record, &ev).ok()) return;
    for (const auto& v : ev.values) (void)tw::decode::Classify(v, ev.strings, nullptr, &c);
  };
  decode(bytes);
  tw::tfrecord::Scanner scanner(bytes, 0, {});
  for (;;) {
    const auto step = scanner.Next();
    if (step == tw::tfrecord::Scanner::Step::kNeedMore) break;
    if (step == tw::tfrecord::Scanner::Step::kRecord) decode(scanner.record());
  }
  return 0;
}

// In-memory throughput of each read stage over one ~64 MiB buffer of TFRecord-framed events:
//   ScanOnly              tfrecord::Scanner: framing, length CRC and data CRC
//   ScanDecode            + decode::DecodeEvent into one reused Event
//   ScanDecodeClassify    + decode::Classify of each value, with a per-tag plugin map as the
//                           ingester keeps it
//   LibprotobufParse      Scanner + tensorflow::Event::ParseFromArray into one reused message
//                           (the baseline the hand decoder is compared to)
// for a PyTorch-style buffer (simple_value scalars) and a TF2-style one (rank-0 DT_FLOAT
// tensors, metadata with each tag's first value), and hardware vs portable CRC32C on 1 MiB.
// bytes_per_second counts framed bytes; items_per_second counts records.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/crc32c.h"
#include "decode/classify.h"
#include "decode/event.h"
#include "gen.h"
#include "support/event_writer.h"
#include "tensorboard.pb.h"
#include "tfrecord/reader.h"
#include "tfrecord/writer.h"

namespace {

using namespace tw;

constexpr size_t kTargetBytes = size_t{64} << 20;
constexpr int kTags = 20;

struct Buffer {
  std::string bytes;
  int64_t records = 0;
  int64_t values = 0;
};

Buffer Generate(bool tf2) {
  Buffer b;
  b.bytes.reserve(kTargetBytes + (1 << 20));
  tfrecord::AppendRecord(&b.bytes,
                         testing::FileVersionEvent(1.7e9, tf2 ? "" : testing::kTorchSourceWriter));
  b.records = 1;
  std::vector<bool> first_seen(kTags, false);
  for (int64_t step = 0; b.bytes.size() < kTargetBytes; ++step) {
    bench::AddStep(step, kTags, tf2, /*seed=*/1, &first_seen, [&](const std::string& ev) {
      tfrecord::AppendRecord(&b.bytes, ev);
      b.records++;
      b.values++;
    });
  }
  return b;
}

const Buffer& PyTorchBuffer() {
  static const Buffer b = Generate(false);
  return b;
}
const Buffer& Tf2Buffer() {
  static const Buffer b = Generate(true);
  return b;
}

// Runs `on_record` over every record of `buf`; false if the scan reported a problem.
template <typename F>
bool ScanAll(const std::string& buf, F&& on_record) {
  tfrecord::Scanner sc(buf, 0, {});
  for (;;) {
    switch (sc.Next()) {
      case tfrecord::Scanner::Step::kRecord:
        on_record(sc.record());
        break;
      case tfrecord::Scanner::Step::kProblem:
        return false;
      case tfrecord::Scanner::Step::kNeedMore:
        return sc.position() == buf.size();
    }
  }
}

void Finish(benchmark::State& state, const Buffer& b) {
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(b.bytes.size()));
  state.SetItemsProcessed(state.iterations() * b.records);
  state.counters["MiB"] = static_cast<double>(b.bytes.size()) / (1 << 20);
  state.counters["bytes/rec"] =
      static_cast<double>(b.bytes.size()) / static_cast<double>(b.records);
}

void ScanOnly(benchmark::State& state, const Buffer& b) {
  for (auto _ : state) {
    int64_t n = 0;
    uint64_t sum = 0;
    if (!ScanAll(b.bytes, [&](std::string_view r) {
          ++n;
          sum += r.size();
        })) {
      state.SkipWithError("scan reported a problem");
      return;
    }
    if (n != b.records) {
      state.SkipWithError("record count mismatch");
      return;
    }
    benchmark::DoNotOptimize(sum);
  }
  Finish(state, b);
}

void ScanDecode(benchmark::State& state, const Buffer& b) {
  decode::Event ev;
  for (auto _ : state) {
    int64_t values = 0;
    bool ok = true;
    double sum = 0;
    const bool scanned = ScanAll(b.bytes, [&](std::string_view r) {
      if (!decode::DecodeEvent(r, &ev).ok()) ok = false;
      values += static_cast<int64_t>(ev.values.size());
      if (!ev.values.empty()) sum += ev.values[0].simple_value;
    });
    if (!scanned || !ok || values != b.values) {
      state.SkipWithError("decode failed or value count mismatch");
      return;
    }
    benchmark::DoNotOptimize(sum);
  }
  Finish(state, b);
}

struct SvHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
struct Remembered {
  decode::TagPlugin plugin;
  bool known = false;
};

void ScanDecodeClassify(benchmark::State& state, const Buffer& b) {
  decode::Event ev;
  decode::Classified c;
  for (auto _ : state) {
    // Per-run memory of each tag's plugin, as the ingester's RunState keeps it.
    std::unordered_map<std::string, Remembered, SvHash, std::equal_to<>> tags;
    int64_t scalars = 0;
    bool ok = true;
    double sum = 0;
    const bool scanned = ScanAll(b.bytes, [&](std::string_view r) {
      if (!decode::DecodeEvent(r, &ev).ok()) {
        ok = false;
        return;
      }
      for (const decode::SummaryValue& v : ev.values) {
        auto it = tags.find(v.tag);
        if (it == tags.end()) it = tags.emplace(std::string(v.tag), Remembered{}).first;
        Remembered& t = it->second;
        if (v.has_metadata) {
          t.plugin = {std::string(v.plugin_name), v.data_class};
          t.known = true;
        }
        if (!decode::Classify(v, ev.strings, t.known ? &t.plugin : nullptr, &c).ok()) {
          ok = false;
          return;
        }
        if (c.kind == decode::Kind::kScalar) {
          ++scalars;
          sum += c.scalar;
        }
      }
    });
    if (!scanned || !ok || scalars != b.values) {
      state.SkipWithError("classify failed or scalar count mismatch");
      return;
    }
    benchmark::DoNotOptimize(sum);
  }
  Finish(state, b);
}

void LibprotobufParse(benchmark::State& state, const Buffer& b) {
  tensorflow::Event ev;
  for (auto _ : state) {
    int64_t values = 0;
    bool ok = true;
    double sum = 0;
    const bool scanned = ScanAll(b.bytes, [&](std::string_view r) {
      if (!ev.ParseFromArray(r.data(), static_cast<int>(r.size()))) ok = false;
      if (ev.has_summary() && ev.summary().value_size() > 0) {
        values += ev.summary().value_size();
        const auto& v = ev.summary().value(0);
        sum += v.has_tensor() ? static_cast<double>(v.tensor().tensor_content().size())
                              : v.simple_value();
      }
    });
    if (!scanned || !ok || values != b.values) {
      state.SkipWithError("parse failed or value count mismatch");
      return;
    }
    benchmark::DoNotOptimize(sum);
  }
  Finish(state, b);
}

void BM_ScanOnly(benchmark::State& s) { ScanOnly(s, PyTorchBuffer()); }
void BM_ScanDecode(benchmark::State& s) { ScanDecode(s, PyTorchBuffer()); }
void BM_ScanDecodeClassify(benchmark::State& s) { ScanDecodeClassify(s, PyTorchBuffer()); }
void BM_LibprotobufParse(benchmark::State& s) { LibprotobufParse(s, PyTorchBuffer()); }
void BM_Tf2_ScanOnly(benchmark::State& s) { ScanOnly(s, Tf2Buffer()); }
void BM_Tf2_ScanDecode(benchmark::State& s) { ScanDecode(s, Tf2Buffer()); }
void BM_Tf2_ScanDecodeClassify(benchmark::State& s) { ScanDecodeClassify(s, Tf2Buffer()); }
void BM_Tf2_LibprotobufParse(benchmark::State& s) { LibprotobufParse(s, Tf2Buffer()); }

BENCHMARK(BM_ScanOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScanDecode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScanDecodeClassify)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LibprotobufParse)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Tf2_ScanOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Tf2_ScanDecode)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Tf2_ScanDecodeClassify)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Tf2_LibprotobufParse)->Unit(benchmark::kMillisecond);

const std::string& OneMiB() {
  static const std::string buf = [] {
    std::string s(size_t{1} << 20, '\0');
    uint64_t x = 42;
    for (char& c : s) c = static_cast<char>(x = bench::Mix(x));
    return s;
  }();
  return buf;
}

void BM_Crc32cHardware(benchmark::State& state) {
  const std::string& buf = OneMiB();
  if (!crc32c::HardwareAccelerated()) state.SetLabel("no SSE4.2: Extend is the portable path");
  for (auto _ : state) benchmark::DoNotOptimize(crc32c::Value(buf.data(), buf.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(buf.size()));
}
void BM_Crc32cPortable(benchmark::State& state) {
  const std::string& buf = OneMiB();
  for (auto _ : state) benchmark::DoNotOptimize(crc32c::ExtendPortable(0, buf.data(), buf.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(buf.size()));
}
BENCHMARK(BM_Crc32cHardware)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Crc32cPortable)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

// The hand-written Event decoder, cross-checked against libprotobuf on every record of the
// corpus and of generated files, and fed damaged bytes that must not crash it.
#include "decode/event.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "decode/classify.h"
#include "support/event_writer.h"
#include "support/test_env.h"
#include "tensorboard.pb.h"
#include "tfrecord/reader.h"

namespace tw::decode {
namespace {

namespace fs = std::filesystem;
using namespace tw::testing;

std::vector<std::string> Records(const std::string& bytes) {
  std::vector<std::string> out;
  tfrecord::Scanner sc(bytes, 0, {});
  for (;;) {
    auto step = sc.Next();
    if (step == tfrecord::Scanner::Step::kRecord) out.emplace_back(sc.record());
    if (step == tfrecord::Scanner::Step::kNeedMore) break;
  }
  return out;
}

// Compares what DecodeEvent saw with what libprotobuf parsed from the same bytes.
void CrossCheck(const std::string& record, const std::string& where) {
  SCOPED_TRACE(where);
  tensorflow::Event ref;
  ASSERT_TRUE(ref.ParseFromString(record));
  Event ev;
  ASSERT_TRUE(DecodeEvent(record, &ev).ok());
  EXPECT_EQ(ev.wall_time, ref.wall_time());
  EXPECT_EQ(ev.step, ref.step());
  EXPECT_EQ(ev.has_source_metadata, ref.has_source_metadata());
  if (ref.has_source_metadata()) {
    EXPECT_EQ(ev.source_writer, ref.source_metadata().writer());
  }
  switch (ref.what_case()) {
    case tensorflow::Event::kFileVersion:
      EXPECT_EQ(ev.what, What::kFileVersion);
      EXPECT_EQ(ev.file_version, ref.file_version());
      break;
    case tensorflow::Event::kGraphDef: EXPECT_EQ(ev.what, What::kGraphDef); break;
    case tensorflow::Event::kMetaGraphDef: EXPECT_EQ(ev.what, What::kMetaGraphDef); break;
    case tensorflow::Event::kTaggedRunMetadata: EXPECT_EQ(ev.what, What::kTaggedRunMetadata); break;
    case tensorflow::Event::kSessionLog:
      EXPECT_EQ(ev.what, What::kSessionLog);
      EXPECT_EQ(ev.session_status, ref.session_log().status());
      EXPECT_EQ(ev.checkpoint_path, ref.session_log().checkpoint_path());
      break;
    case tensorflow::Event::kSummary: {
      EXPECT_EQ(ev.what, What::kSummary);
      const auto& vals = ref.summary().value();
      ASSERT_EQ(ev.values.size(), static_cast<size_t>(vals.size()));
      for (int i = 0; i < vals.size(); ++i) {
        const auto& r = vals[i];
        const SummaryValue& v = ev.values[i];
        EXPECT_EQ(v.tag, r.tag());
        EXPECT_EQ(v.has_metadata, r.has_metadata());
        EXPECT_EQ(v.plugin_name, r.metadata().plugin_data().plugin_name());
        EXPECT_EQ(v.plugin_content, r.metadata().plugin_data().content());
        EXPECT_EQ(v.data_class, r.metadata().data_class());
        switch (r.value_case()) {
          case tensorflow::Summary::Value::kSimpleValue:
            ASSERT_EQ(v.value_case, ValueCase::kSimple);
            if (std::isnan(r.simple_value())) {
              EXPECT_TRUE(std::isnan(v.simple_value));
            } else {
              EXPECT_EQ(v.simple_value, r.simple_value());
            }
            break;
          case tensorflow::Summary::Value::kHisto: {
            ASSERT_EQ(v.value_case, ValueCase::kHisto);
            HistogramView h;
            ASSERT_TRUE(DecodeHistogram(v.raw, &h).ok());
            EXPECT_EQ(h.num, r.histo().num());
            EXPECT_EQ(h.sum, r.histo().sum());
            EXPECT_EQ(h.min, r.histo().min());
            EXPECT_EQ(h.max, r.histo().max());
            EXPECT_EQ(h.limits, std::vector<double>(r.histo().bucket_limit().begin(),
                                                     r.histo().bucket_limit().end()));
            EXPECT_EQ(h.counts,
                      std::vector<double>(r.histo().bucket().begin(), r.histo().bucket().end()));
            break;
          }
          case tensorflow::Summary::Value::kImage: EXPECT_EQ(v.value_case, ValueCase::kImage); break;
          case tensorflow::Summary::Value::kTensor: {
            ASSERT_EQ(v.value_case, ValueCase::kTensor);
            const auto& t = r.tensor();
            EXPECT_EQ(v.tensor.dtype, t.dtype());
            EXPECT_EQ(v.tensor.rank, t.tensor_shape().dim_size());
            for (int d = 0; d < std::min(4, t.tensor_shape().dim_size()); ++d)
              EXPECT_EQ(v.tensor.dims[d], t.tensor_shape().dim(d).size());
            EXPECT_EQ(v.tensor.content, t.tensor_content());
            ASSERT_EQ(v.tensor.string_count, static_cast<uint32_t>(t.string_val_size()));
            for (int s = 0; s < t.string_val_size(); ++s)
              EXPECT_EQ(ev.strings[v.tensor.string_first + s], t.string_val(s));
            if (t.float_val_size() > 0 && t.tensor_shape().dim_size() == 0) {
              double got;
              Classified c;
              TagPlugin scalars{"scalars", 1};
              ASSERT_TRUE(Classify(v, ev.strings, &scalars, &c).ok());
              got = c.scalar;
              EXPECT_EQ(got, t.float_val(0));
            }
            break;
          }
          case tensorflow::Summary::Value::VALUE_NOT_SET:
            EXPECT_EQ(v.value_case, ValueCase::kNone);
            break;
          default: break;
        }
      }
      break;
    }
    default: break;
  }
}

TEST(Decode, AgreesWithLibprotobufOnEveryCorpusRecord) {
  const std::string corpus = CorpusDir();
  if (corpus.empty()) GTEST_SKIP() << "../shared/corpus not found";
  size_t records = 0;
  for (const auto& e : fs::recursive_directory_iterator(corpus)) {
    if (!e.is_regular_file() || e.path().filename().native().find("tfevents") == std::string::npos)
      continue;
    const auto recs = Records(ReadFile(e.path()));
    for (size_t i = 0; i < recs.size(); ++i)
      CrossCheck(recs[i], e.path().native() + " record " + std::to_string(i));
    records += recs.size();
  }
  EXPECT_GT(records, 6000u);
}

TEST(Decode, AgreesWithLibprotobufOnGeneratedEvents) {
  const std::vector<std::string> events = {
      FileVersionEvent(1.5, kTorchSourceWriter),
      SourceMetadataEvent(2, "x"),
      SimpleScalarEvent("a/b", -3, 4.25, 1e-30f),
      SimpleScalarEvent("nan", 1, 1, std::nanf("")),
      Tf2ScalarEvent("t", 7, 8, 3.5f, true),
      TensorScalarEvent("f", 1, 1, 2.5, ScalarEncoding::kFloatVal, true),
      TensorScalarEvent("d", 1, 1, 2.5, ScalarEncoding::kDoubleVal, false),
      HistogramEvent("h", 1, 1, {1, 2, 3, 4}, {0.5, 2.5, 1e300}),
      Tf2HistogramEvent("h2", 1, 1, {{0, 1, 2}, {1, 3, 4}}, true),
      TextEvent("txt", 1, 1, {"a", "b", "c"}),
      HParamsStartEvent(1, {{"lr", 0.1}, {"name", std::string("x")}}, true),
      HParamsStartEvent(1, {{"flag", false}}, false),
      SessionLogEvent(100, 5, 3, "/ckpt/model-100"),
      ImageEvent("img", 1, 1),
      GraphDefEvent(1, 5000),
      MultiScalarEvent(9, 9, {{"x", 1}, {"y", 2}, {"x", 3}}),
  };
  for (size_t i = 0; i < events.size(); ++i) CrossCheck(events[i], "event " + std::to_string(i));
}

TEST(Decode, DamagedBytesAreRejectedNeverCrash) {
  // Truncations and random byte flips of real events: the decoder returns Corrupt or decodes
  // something; it never reads out of bounds (the ASan preset runs this too).
  std::vector<std::string> seeds = {
      Tf2ScalarEvent("epoch_loss", 3, 1e9, 0.25f, true),
      HistogramEvent("w", 2, 1, {1, 2, 3}, {1, 2, 1e12}),
      HParamsStartEvent(1, {{"lr", 0.1}, {"opt", std::string("adam")}}, true),
      TextEvent("t", 1, 1, {"hello", "world"}),
  };
  std::mt19937 rng(1234);
  Event ev;
  Classified c;
  int rejected = 0;
  for (const auto& seed : seeds) {
    for (size_t n = 0; n < seed.size(); ++n) {
      Status st = DecodeEvent(std::string_view(seed.data(), n), &ev);
      if (!st.ok()) {
        ++rejected;
        EXPECT_EQ(st.code(), Code::kCorrupt);
        EXPECT_NE(st.message().find("malformed"), std::string::npos) << st.message();
      }
    }
    for (int trial = 0; trial < 2000; ++trial) {
      std::string bad = seed;
      for (int k = 0; k < 1 + trial % 4; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
      if (DecodeEvent(bad, &ev).ok()) {
        for (const auto& v : ev.values) (void)Classify(v, ev.strings, nullptr, &c);
      }
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST(Decode, MalformedMessageNamesTheField) {
  // Field 2 (step) declared with wire type 2 (length-delimited) instead of a varint.
  const std::string bad = std::string("\x12\x01\x00", 3);
  Event ev;
  Status st = DecodeEvent(bad, &ev);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Event.step"), std::string::npos) << st.message();
}

TEST(Classify, HalfAndBfloat16Conversions) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7e00)));
  EXPECT_EQ(Bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bfloat16ToFloat(0xc049), -3.140625f);
  // Values exactly representable in both formats (2^-20 is a half subnormal) round-trip.
  for (float f : {0.5f, -1.25f, 1024.0f, std::ldexp(1.0f, -20)}) {
    EXPECT_EQ(HalfToFloat(FloatToHalfBits(f)), f) << f;
    EXPECT_EQ(Bfloat16ToFloat(FloatToBfloat16Bits(f)), f) << f;
  }
}

TEST(Classify, ScalarTensorWithTooFewBytesIsCorrupt) {
  Event ev;
  ASSERT_TRUE(DecodeEvent(Tf2ScalarEvent("x", 1, 1, 1.0f, true), &ev).ok());
  SummaryValue v = ev.values[0];
  v.tensor.content = v.tensor.content.substr(0, 3);
  Classified c;
  Status st = Classify(v, ev.strings, nullptr, &c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("3 bytes"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tw::decode

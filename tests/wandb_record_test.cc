// The hand-written wandb_internal.Record decoder against libprotobuf: random Records built
// with the generated classes of proto/wandb_record.proto (W&B's field numbers), serialized by
// libprotobuf, decoded by wandb::DecodeRecord, every field compared. Plus value_json
// parsing and histograms, the pieces the ingester builds on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "wandb/record.h"
#include "wandb/value.h"
#include "decode/json_value.h"
#include "wandb_record.pb.h"

namespace tw::wandb {
namespace {

namespace wp = tw::wandb_proto;
using decode::Histogram;
using decode::JsonNode;
using decode::ParseJson;
using decode::ParseJsonNumber;
using ::testing::HasSubstr;

std::string RandomString(std::mt19937& rng) {
  static const std::vector<std::string> pieces = {
      "", "a", "loss", "train/loss", "a.b", "c/d", "_step", "é", "日本", "\xF0\x9F\x94\xA5",
      "with space", "{\"x\": 1}", std::string(200, 'k'), std::string("nul\0byte", 8)};
  std::string s;
  const int n = static_cast<int>(rng() % 3);
  for (int i = 0; i < n; ++i) s += pieces[rng() % pieces.size()];
  return s;
}

int64_t RandomInt(std::mt19937_64& rng) {
  switch (rng() % 5) {
    case 0: return 0;
    case 1: return static_cast<int64_t>(rng() % 100);
    case 2: return -static_cast<int64_t>(rng() % 100000) - 1;
    case 3: return std::numeric_limits<int64_t>::max() - static_cast<int64_t>(rng() % 10);
    default: return static_cast<int64_t>(rng());
  }
}

int32_t RandomInt32(std::mt19937_64& rng) { return static_cast<int32_t>(RandomInt(rng)); }

// An item of a history row, config, summary: a flat key or a nested path, never both (as
// W&B writes them), and a value.
template <typename WantItem>
void FillItem(std::mt19937& rng, WantItem* it) {
  if (rng() % 2) {
    it->set_key(RandomString(rng));
  } else {
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) it->add_nested_key(RandomString(rng));
  }
  it->set_value_json(RandomString(rng));
}

template <typename WantItem>
void ExpectItem(const Record& d, size_t i, const WantItem& want, bool removed) {
  ASSERT_LT(i, d.items.size());
  const Item& got = d.items[i];
  EXPECT_EQ(got.key, want.key()) << i;
  ASSERT_EQ(got.count, static_cast<uint32_t>(want.nested_key_size())) << i;
  for (int k = 0; k < want.nested_key_size(); ++k)
    EXPECT_EQ(d.parts[got.first + static_cast<uint32_t>(k)], want.nested_key(k)) << i;
  EXPECT_EQ(got.value_json, want.value_json()) << i;
  EXPECT_EQ(got.removed, removed) << i;
}

template <typename Rec>
void ExpectUpdates(const Record& d, const Rec& want) {
  ASSERT_EQ(d.items.size(), static_cast<size_t>(want.update_size() + want.remove_size()));
  // Updates and removes in wire order: libprotobuf writes field 1 before field 2.
  size_t i = 0;
  for (const auto& u : want.update()) ExpectItem(d, i++, u, false);
  for (const auto& r : want.remove()) ExpectItem(d, i++, r, true);
}

void SetTs(std::mt19937_64& rng, wp::Timestamp* ts) {
  ts->set_seconds(1700000000 + static_cast<int64_t>(rng() % 100000000));
  ts->set_nanos(static_cast<int32_t>(rng() % 1000000000));
}
double TsSeconds(const wp::Timestamp& ts) {
  return static_cast<double>(ts.seconds()) + static_cast<double>(ts.nanos()) * 1e-9;
}

TEST(WandbRecordDecode, RandomRecordsDecodeAsLibprotobufEncodesThem) {
  std::mt19937 rng(1);
  std::mt19937_64 rng64(2);
  Record d;  // reused, as the ingester does
  int kinds_seen[32] = {};
  for (int iter = 0; iter < 3000; ++iter) {
    SCOPED_TRACE("record " + std::to_string(iter));
    wp::Record r;
    if (rng() % 4) r.set_num(RandomInt(rng64));
    if (rng() % 5 == 0) r.mutable_control()->set_local(true);
    if (rng() % 5 == 0) r.set_uuid(RandomString(rng));
    const int kind = static_cast<int>(rng() % 20);
    switch (kind) {
      case 0: {
        auto* h = r.mutable_history();
        const int n = static_cast<int>(rng() % 6);
        for (int i = 0; i < n; ++i) FillItem(rng, h->add_item());
        if (rng() % 2) h->mutable_step()->set_num(RandomInt(rng64));
        break;
      }
      case 1: {
        auto* s = r.mutable_stats();
        if (rng() % 4) SetTs(rng64, s->mutable_timestamp());
        const int n = static_cast<int>(rng() % 6);
        for (int i = 0; i < n; ++i) {
          auto* it = s->add_item();
          it->set_key(RandomString(rng));
          it->set_value_json(RandomString(rng));
        }
        break;
      }
      case 2:
      case 3: {
        auto* c = kind == 2 ? r.mutable_config() : nullptr;
        auto* s = kind == 3 ? r.mutable_summary() : nullptr;
        const int n = static_cast<int>(rng() % 5), m = static_cast<int>(rng() % 3);
        for (int i = 0; i < n; ++i) c ? FillItem(rng, c->add_update()) : FillItem(rng, s->add_update());
        for (int i = 0; i < m; ++i) c ? FillItem(rng, c->add_remove()) : FillItem(rng, s->add_remove());
        break;
      }
      case 4: {
        auto* x = r.mutable_run();
        x->set_run_id(RandomString(rng));
        x->set_entity(RandomString(rng));
        x->set_project(RandomString(rng));
        x->set_display_name(RandomString(rng));
        x->set_run_group(RandomString(rng));
        x->set_job_type(RandomString(rng));
        x->set_host(RandomString(rng));
        x->set_notes(RandomString(rng));
        x->add_tags(RandomString(rng));
        x->set_starting_step(RandomInt(rng64));
        x->set_resumed(rng() % 2);
        if (rng() % 2) SetTs(rng64, x->mutable_start_time());
        const int n = static_cast<int>(rng() % 4);
        for (int i = 0; i < n; ++i) FillItem(rng, x->mutable_config()->add_update());
        if (rng() % 2) FillItem(rng, x->mutable_summary()->add_update());  // not read
        break;
      }
      case 5:
        r.mutable_exit()->set_exit_code(RandomInt32(rng64));
        r.mutable_exit()->set_runtime(RandomInt32(rng64));
        break;
      case 6: {
        auto* m = r.mutable_metric();
        if (rng() % 2) m->set_name(RandomString(rng));
        else m->set_glob_name(RandomString(rng));
        m->set_step_metric(RandomString(rng));
        m->set_step_metric_index(RandomInt32(rng64));
        if (rng() % 2) m->mutable_options()->set_step_sync(rng() % 2);
        if (rng() % 2) m->mutable_options()->set_hidden(true);
        m->set_goal(static_cast<int32_t>(rng() % 3));
        break;
      }
      case 7: r.mutable_header()->mutable_version_info()->set_producer(RandomString(rng)); break;
      case 8: r.mutable_telemetry()->set_cli_version(RandomString(rng));
              r.mutable_telemetry()->set_python_version(RandomString(rng)); break;
      case 9:
        r.mutable_alert()->set_title(RandomString(rng));
        r.mutable_alert()->set_text(RandomString(rng));
        r.mutable_alert()->set_level(RandomString(rng));
        r.mutable_alert()->set_wait_duration(RandomInt(rng64));
        break;
      case 10:
        SetTs(rng64, r.mutable_output()->mutable_timestamp());
        r.mutable_output()->set_line(RandomString(rng));
        r.mutable_output()->set_output_type(1);
        break;
      case 11:
        SetTs(rng64, r.mutable_output_raw()->mutable_timestamp());
        r.mutable_output_raw()->set_line(RandomString(rng));
        break;
      case 12: r.mutable_tbrecord()->set_log_dir(RandomString(rng)); r.mutable_tbrecord()->set_save(true); break;
      case 13: r.mutable_final(); break;
      case 14: r.mutable_footer(); break;
      case 15: r.mutable_preempting(); break;
      case 16: r.mutable_files()->add_files()->set_path(RandomString(rng)); break;
      case 17: r.mutable_artifact()->set_name(RandomString(rng)); break;
      default: break;  // no record_type: a Record with only num (and control, uuid)
    }
    ++kinds_seen[kind];
    // Fields this proto does not know, at the top level, of every wire type but groups.
    if (rng() % 3 == 0) {
      auto* u = r.GetReflection()->MutableUnknownFields(&r);
      u->AddVarint(200 + static_cast<int>(rng() % 50), rng64());
      u->AddFixed32(300, static_cast<uint32_t>(rng()));
      u->AddFixed64(301, rng64());
      u->AddLengthDelimited(100, RandomString(rng));
    }
    std::string bytes;
    ASSERT_TRUE(r.SerializeToString(&bytes));
    const Status st = DecodeRecord(bytes, &d);
    ASSERT_TRUE(st.ok()) << st.ToString();

    EXPECT_EQ(d.num, r.num());
    switch (r.record_type_case()) {
      case wp::Record::kHistory: {
        EXPECT_EQ(d.kind, RecordKind::kHistory);
        const auto& h = r.history();
        ASSERT_EQ(d.items.size(), static_cast<size_t>(h.item_size()));
        for (int i = 0; i < h.item_size(); ++i) ExpectItem(d, static_cast<size_t>(i), h.item(i), false);
        EXPECT_EQ(d.has_step, h.has_step());
        EXPECT_EQ(d.step, h.has_step() ? h.step().num() : 0);
        break;
      }
      case wp::Record::kStats: {
        EXPECT_EQ(d.kind, RecordKind::kStats);
        const auto& s = r.stats();
        ASSERT_EQ(d.items.size(), static_cast<size_t>(s.item_size()));
        for (int i = 0; i < s.item_size(); ++i) {
          EXPECT_EQ(d.items[static_cast<size_t>(i)].key, s.item(i).key());
          EXPECT_EQ(d.items[static_cast<size_t>(i)].count, 0u);
          EXPECT_EQ(d.items[static_cast<size_t>(i)].value_json, s.item(i).value_json());
        }
        EXPECT_DOUBLE_EQ(d.timestamp, s.has_timestamp() ? TsSeconds(s.timestamp()) : 0);
        break;
      }
      case wp::Record::kConfig:
        EXPECT_EQ(d.kind, RecordKind::kConfig);
        ExpectUpdates(d, r.config());
        break;
      case wp::Record::kSummary:
        EXPECT_EQ(d.kind, RecordKind::kSummary);
        ExpectUpdates(d, r.summary());
        break;
      case wp::Record::kRun: {
        EXPECT_EQ(d.kind, RecordKind::kRun);
        const auto& x = r.run();
        EXPECT_EQ(d.run_id, x.run_id());
        EXPECT_EQ(d.entity, x.entity());
        EXPECT_EQ(d.project, x.project());
        EXPECT_EQ(d.display_name, x.display_name());
        EXPECT_EQ(d.run_group, x.run_group());
        EXPECT_EQ(d.job_type, x.job_type());
        EXPECT_EQ(d.host, x.host());
        EXPECT_EQ(d.starting_step, x.starting_step());
        EXPECT_EQ(d.resumed, x.resumed());
        EXPECT_DOUBLE_EQ(d.start_time, x.has_start_time() ? TsSeconds(x.start_time()) : 0);
        ExpectUpdates(d, x.config());  // run.summary is not read
        break;
      }
      case wp::Record::kExit:
        EXPECT_EQ(d.kind, RecordKind::kExit);
        EXPECT_EQ(d.exit_code, r.exit().exit_code());
        EXPECT_EQ(d.runtime, r.exit().runtime());
        break;
      case wp::Record::kMetric: {
        EXPECT_EQ(d.kind, RecordKind::kMetric);
        const auto& m = r.metric();
        EXPECT_EQ(d.metric_name, m.name());
        EXPECT_EQ(d.metric_glob, m.glob_name());
        EXPECT_EQ(d.step_metric, m.step_metric());
        EXPECT_EQ(d.step_sync, m.options().step_sync());
        EXPECT_EQ(d.goal, m.goal());
        break;
      }
      case wp::Record::kHeader:
        EXPECT_EQ(d.kind, RecordKind::kHeader);
        EXPECT_EQ(d.version, r.header().version_info().producer());
        break;
      case wp::Record::kTelemetry:
        EXPECT_EQ(d.kind, RecordKind::kTelemetry);
        EXPECT_EQ(d.version, r.telemetry().cli_version());
        break;
      case wp::Record::kAlert:
        EXPECT_EQ(d.kind, RecordKind::kAlert);
        EXPECT_EQ(d.alert_title, r.alert().title());
        EXPECT_EQ(d.alert_text, r.alert().text());
        EXPECT_EQ(d.alert_level, r.alert().level());
        break;
      case wp::Record::kOutput:
        EXPECT_EQ(d.kind, RecordKind::kOutput);
        EXPECT_EQ(d.line, r.output().line());
        EXPECT_DOUBLE_EQ(d.timestamp, TsSeconds(r.output().timestamp()));
        break;
      case wp::Record::kOutputRaw:
        EXPECT_EQ(d.kind, RecordKind::kOutputRaw);
        EXPECT_EQ(d.line, r.output_raw().line());
        EXPECT_DOUBLE_EQ(d.timestamp, TsSeconds(r.output_raw().timestamp()));
        break;
      case wp::Record::kTbrecord:
        EXPECT_EQ(d.kind, RecordKind::kTbRecord);
        EXPECT_EQ(d.tb_log_dir, r.tbrecord().log_dir());
        break;
      case wp::Record::kFinal: EXPECT_EQ(d.kind, RecordKind::kFinal); break;
      case wp::Record::kFooter: EXPECT_EQ(d.kind, RecordKind::kFooter); break;
      case wp::Record::kPreempting: EXPECT_EQ(d.kind, RecordKind::kPreempting); break;
      case wp::Record::kFiles: EXPECT_EQ(d.kind, RecordKind::kFiles); break;
      case wp::Record::kArtifact: EXPECT_EQ(d.kind, RecordKind::kArtifact); break;
      case wp::Record::RECORD_TYPE_NOT_SET: EXPECT_EQ(d.kind, RecordKind::kNone); break;
      default: ADD_FAILURE() << "unexpected record type " << r.record_type_case();
    }
    if (r.record_type_case() != wp::Record::kHistory && r.record_type_case() != wp::Record::kStats &&
        r.record_type_case() != wp::Record::kConfig && r.record_type_case() != wp::Record::kSummary &&
        r.record_type_case() != wp::Record::kRun) {
      EXPECT_TRUE(d.items.empty());
    }
  }
  for (int k = 0; k < 20; ++k) EXPECT_GT(kinds_seen[k], 50) << k;
}

TEST(WandbRecordDecode, ItemNamesJoinNestedKeysWithDots) {
  wp::Record r;
  auto* h = r.mutable_history();
  h->add_item()->set_key("flat.key");
  auto* n = h->add_item();
  n->add_nested_key("a.b");
  n->add_nested_key("c/d");
  std::string bytes;
  ASSERT_TRUE(r.SerializeToString(&bytes));
  Record d;
  ASSERT_TRUE(DecodeRecord(bytes, &d).ok());
  std::string name;
  ItemName(d, d.items[0], &name);
  EXPECT_EQ(name, "flat.key");
  ItemName(d, d.items[1], &name);
  EXPECT_EQ(name, "a.b.c/d");
}

TEST(WandbRecordDecode, TruncatedAndMalformedRecordsFailCleanly) {
  wp::Record r;
  r.set_num(42);
  auto* h = r.mutable_history();
  for (int i = 0; i < 5; ++i) {
    auto* it = h->add_item();
    it->add_nested_key("k" + std::to_string(i));
    it->set_value_json(std::to_string(i * 1.5));
  }
  h->mutable_step()->set_num(7);
  std::string bytes;
  ASSERT_TRUE(r.SerializeToString(&bytes));
  Record d;
  int failed = 0;
  // Every proper prefix: either an error naming the message, or (cut between fields) a
  // decode of fewer fields; never a read past the end (ASan/UBSan builds check that).
  for (size_t n = 0; n < bytes.size(); ++n) {
    const Status st = DecodeRecord(std::string_view(bytes).substr(0, n), &d);
    if (!st.ok()) {
      ++failed;
      EXPECT_THAT(st.message(), HasSubstr("malformed wandb_internal.Record"));
    }
  }
  EXPECT_GT(failed, static_cast<int>(bytes.size()) / 2);
  // The history field cut inside: the message names it.
  const Status st = DecodeRecord(std::string_view(bytes).substr(0, bytes.size() - 1), &d);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("history, field 2"));
  // A group (wire type 3) where a Record field is expected.
  EXPECT_FALSE(DecodeRecord(std::string("\x13\x14", 2), &d).ok());
  // history sent as a varint.
  EXPECT_FALSE(DecodeRecord(std::string("\x10\x01", 2), &d).ok());
}

// ---------------------------------------------------------------------------------------
// value_json.

TEST(WandbValue, NumbersAsPythonWritesThem) {
  double v = 0;
  ASSERT_TRUE(ParseJsonNumber("NaN", &v));
  EXPECT_TRUE(std::isnan(v));
  ASSERT_TRUE(ParseJsonNumber("Infinity", &v));
  EXPECT_EQ(v, std::numeric_limits<double>::infinity());
  ASSERT_TRUE(ParseJsonNumber("-Infinity", &v));
  EXPECT_EQ(v, -std::numeric_limits<double>::infinity());
  ASSERT_TRUE(ParseJsonNumber("12345678901234567890", &v));
  EXPECT_EQ(v, 12345678901234567890.0);
  ASSERT_TRUE(ParseJsonNumber("-0.25e-3", &v));
  EXPECT_EQ(v, -0.25e-3);
  ASSERT_TRUE(ParseJsonNumber("true", &v));
  EXPECT_EQ(v, 1);
  ASSERT_TRUE(ParseJsonNumber("false", &v));
  EXPECT_EQ(v, 0);
  for (const char* no : {"", "null", "\"1\"", "[1]", "{}", "nan", "inf", "1.5x", "+1", "- 1"})
    EXPECT_FALSE(ParseJsonNumber(no, &v)) << no;
}

TEST(WandbValue, ParsesNestedDocumentsWithNonFiniteNumbers) {
  JsonNode n;
  ASSERT_TRUE(ParseJson(R"( {"a.b": {"c/d": NaN, "e": [1, -Infinity, "x\u00e9\ud83d\udd25"]}, "n": null, "t": true} )", &n).ok());
  ASSERT_EQ(n.type, JsonNode::Type::kObject);
  const JsonNode* ab = n.Find("a.b");
  ASSERT_NE(ab, nullptr);
  EXPECT_TRUE(std::isnan(ab->Find("c/d")->number));
  const JsonNode* e = ab->Find("e");
  ASSERT_EQ(e->array.size(), 3u);
  EXPECT_EQ(e->array[1].number, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(e->array[2].text, "x\xC3\xA9\xF0\x9F\x94\xA5");
  EXPECT_EQ(n.Find("n")->type, JsonNode::Type::kNull);
  EXPECT_EQ(ClassifyValue(*n.Find("t")), ValueKind::kNumber);
  for (const char* bad : {"{", "[1,", "{\"a\" 1}", "\"open", "{\"a\": 1} x", "tru", "[1 2]"}) {
    const Status st = ParseJson(bad, &n);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_THAT(st.message(), HasSubstr("at byte")) << bad;
  }
  std::string deep(100, '[');
  EXPECT_THAT(ParseJson(deep + std::string(100, ']'), &n).message(), HasSubstr("nested too deep"));
}

TEST(WandbValue, HistogramsWithBinsOrPackedBins) {
  JsonNode n;
  Histogram h;
  ASSERT_TRUE(ParseJson(R"({"_type": "histogram", "values": [0, 2, 0, 3], "bins": [0, 1, 2, 3, 4]})", &n).ok());
  EXPECT_EQ(ClassifyValue(n), ValueKind::kHistogram);
  ASSERT_TRUE(ParseHistogram(n, &h).ok());
  EXPECT_EQ(h.count, 5);
  EXPECT_EQ(h.min, 1);
  EXPECT_EQ(h.max, 4);
  EXPECT_DOUBLE_EQ(h.sum, 2 * 1.5 + 3 * 3.5);
  ASSERT_EQ(h.buckets.size(), 2u);
  ASSERT_TRUE(ParseJson(R"({"_type": "histogram", "values": [1, 1], "packedBins": {"min": -1, "size": 0.5, "count": 2}})", &n).ok());
  ASSERT_TRUE(ParseHistogram(n, &h).ok());
  EXPECT_EQ(h.count, 2);
  EXPECT_EQ(h.min, -1);
  EXPECT_EQ(h.max, 0);
  ASSERT_TRUE(ParseJson(R"({"_type": "histogram", "values": [1, 1], "bins": [0, 1]})", &n).ok());
  EXPECT_THAT(ParseHistogram(n, &h).message(), HasSubstr("2 values but 2 bin edges"));
  ASSERT_TRUE(ParseJson(R"({"_type": "image-file", "path": "media/x.png"})", &n).ok());
  EXPECT_EQ(ClassifyValue(n), ValueKind::kImage);
  ASSERT_TRUE(ParseJson(R"({"_type": "table-file"})", &n).ok());
  EXPECT_EQ(ClassifyValue(n), ValueKind::kMedia);
}

}  // namespace
}  // namespace tw::wandb

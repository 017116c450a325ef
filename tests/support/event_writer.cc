#include "support/event_writer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "hparams.pb.h"
#include "tensorboard.pb.h"
#include "tfrecord/writer.h"

namespace tw::testing {
namespace {

namespace tf = ::tensorflow;
namespace hp = ::tensorboard::hparams;

// A valid 1x1 8-bit grayscale PNG (gray 128): real image bytes, as small as they come.
constexpr char kPng1x1[] =
    "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x01\x00\x00"
    "\x00\x01\x08\x00\x00\x00\x00\x3a\x7e\x9b\x55\x00\x00\x00\x0a\x49\x44\x41\x54\x78\xda\x63"
    "\x68\x00\x00\x00\x82\x00\x81\xda\x45\x08\x3b\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60"
    "\x82";

tf::Event NewEvent(double wall_time, int64_t step = 0) {
  tf::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  return e;
}

// Deterministic serialization orders map entries (the hparams) by key; otherwise their order
// varies from process to process and the example logdir would not be reproducible.
std::string Serialize(const google::protobuf::MessageLite& m) {
  std::string out;
  bool ok;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    ok = m.SerializeToCodedStream(&coded);
  }  // destroying `coded` trims `out` to the message's size
  if (!ok) throw std::runtime_error("cannot serialize " + m.GetTypeName());
  return out;
}

tf::Summary::Value* AddValue(tf::Event* e, const std::string& tag) {
  tf::Summary::Value* v = e->mutable_summary()->add_value();
  v->set_tag(tag);
  return v;
}

// Plugin metadata as the writers set it. Every plugin but hparams writes a version-0
// PluginData message as content, which serializes to nothing, hence the empty default.
void SetPlugin(tf::Summary::Value* v, const std::string& plugin, tf::DataClass data_class,
               const std::string& content = "") {
  tf::SummaryMetadata* m = v->mutable_metadata();
  m->mutable_plugin_data()->set_plugin_name(plugin);
  m->mutable_plugin_data()->set_content(content);
  m->set_data_class(data_class);
}

// tensor_content is little-endian whatever the host; written byte by byte to say so.
template <typename U>
void AppendLittleEndian(std::string* out, U bits) {
  for (size_t i = 0; i < sizeof(U); ++i)
    out->push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

// v >> s, rounded to nearest with ties to even (0 < s < 32).
uint32_t ShiftRoundEven(uint32_t v, int s) {
  const uint32_t q = v >> s;
  const uint32_t rem = v & ((1u << s) - 1);
  const uint32_t half = 1u << (s - 1);
  return q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
}

void FillScalarTensor(double value, ScalarEncoding enc, tf::TensorProto* t) {
  t->mutable_tensor_shape();  // rank 0: a shape with no dims, present as writers emit it
  const float f = static_cast<float>(value);
  std::string* content = t->mutable_tensor_content();
  switch (enc) {
    case ScalarEncoding::kFloatContent:
      t->set_dtype(tf::DT_FLOAT);
      return AppendLittleEndian(content, std::bit_cast<uint32_t>(f));
    case ScalarEncoding::kFloatVal:
      t->set_dtype(tf::DT_FLOAT);
      return t->add_float_val(f);
    case ScalarEncoding::kDoubleContent:
      t->set_dtype(tf::DT_DOUBLE);
      return AppendLittleEndian(content, std::bit_cast<uint64_t>(value));
    case ScalarEncoding::kDoubleVal:
      t->set_dtype(tf::DT_DOUBLE);
      return t->add_double_val(value);
    case ScalarEncoding::kHalfVal:
      t->set_dtype(tf::DT_HALF);
      return t->add_half_val(FloatToHalfBits(f));
    case ScalarEncoding::kHalfContent:
      t->set_dtype(tf::DT_HALF);
      return AppendLittleEndian(content, FloatToHalfBits(f));
    case ScalarEncoding::kBfloat16Val:
      t->set_dtype(tf::DT_BFLOAT16);
      return t->add_half_val(FloatToBfloat16Bits(f));
    case ScalarEncoding::kBfloat16Content:
      t->set_dtype(tf::DT_BFLOAT16);
      return AppendLittleEndian(content, FloatToBfloat16Bits(f));
    case ScalarEncoding::kInt32Val:
      t->set_dtype(tf::DT_INT32);
      return t->add_int_val(static_cast<int32_t>(value));
    case ScalarEncoding::kInt64Val:
      t->set_dtype(tf::DT_INT64);
      return t->add_int64_val(static_cast<int64_t>(value));
    case ScalarEncoding::kInt64Content:
      t->set_dtype(tf::DT_INT64);
      return AppendLittleEndian(content, static_cast<uint64_t>(static_cast<int64_t>(value)));
    case ScalarEncoding::kBoolVal:
      t->set_dtype(tf::DT_BOOL);
      return t->add_bool_val(value != 0);
  }
}

struct SetStructValue {
  google::protobuf::Value* out;
  void operator()(double d) const { out->set_number_value(d); }
  void operator()(const std::string& s) const { out->set_string_value(s); }
  void operator()(bool b) const { out->set_bool_value(b); }
};

// A Summary.Value carrying hparams plugin data, with no value set (PyTorch's form).
tf::Summary::Value* AddHParamsValue(tf::Event* e, const std::string& tag,
                                    const hp::HParamsPluginData& data) {
  tf::Summary::Value* v = AddValue(e, tag);
  tf::SummaryMetadata::PluginData* pd = v->mutable_metadata()->mutable_plugin_data();
  pd->set_plugin_name("hparams");
  pd->set_content(Serialize(data));
  return v;
}

}  // namespace

std::string FileVersionEvent(double wall_time, const std::string& source_writer) {
  tf::Event e = NewEvent(wall_time);
  e.set_file_version("brain.Event:2");
  if (!source_writer.empty()) e.mutable_source_metadata()->set_writer(source_writer);
  return Serialize(e);
}

std::string SourceMetadataEvent(double wall_time, const std::string& writer) {
  tf::Event e = NewEvent(wall_time);
  e.mutable_source_metadata()->set_writer(writer);
  return Serialize(e);
}

std::string SimpleScalarEvent(const std::string& tag, int64_t step, double wall_time, float value) {
  tf::Event e = NewEvent(wall_time, step);
  AddValue(&e, tag)->set_simple_value(value);
  return Serialize(e);
}

std::string Tf2ScalarEvent(const std::string& tag, int64_t step, double wall_time, float value,
                           bool with_metadata) {
  return TensorScalarEvent(tag, step, wall_time, value, ScalarEncoding::kFloatContent,
                           with_metadata);
}

std::string TensorScalarEvent(const std::string& tag, int64_t step, double wall_time, double value,
                              ScalarEncoding enc, bool with_metadata) {
  tf::Event e = NewEvent(wall_time, step);
  tf::Summary::Value* v = AddValue(&e, tag);
  FillScalarTensor(value, enc, v->mutable_tensor());
  if (with_metadata) SetPlugin(v, "scalars", tf::DATA_CLASS_SCALAR);
  return Serialize(e);
}

uint16_t FloatToHalfBits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t exp = (x >> 23) & 0xff;
  const uint32_t mant = x & 0x7fffff;
  if (exp == 0xff) {  // infinity, or NaN kept NaN (quiet bit set, so it cannot become inf)
    return static_cast<uint16_t>(sign | 0x7c00 | (mant != 0 ? 0x200 | (mant >> 13) : 0));
  }
  const int e = static_cast<int>(exp) - 127 + 15;            // the half's biased exponent
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);  // too large: infinity
  if (e < -10) return static_cast<uint16_t>(sign);  // below half the smallest subnormal: zero
  if (e <= 0) {  // subnormal: the significand, implicit bit included, in units of 2^-24
    return static_cast<uint16_t>(sign | ShiftRoundEven(mant | 0x800000, 14 - e));
  }
  // Normal: exponent and mantissa shifted together, so a rounding carry bumps the exponent
  // (up to infinity, which is the right answer).
  return static_cast<uint16_t>(sign | ShiftRoundEven((static_cast<uint32_t>(e) << 23) | mant, 13));
}

uint16_t FloatToBfloat16Bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet, never inf
  return static_cast<uint16_t>(ShiftRoundEven(x, 16));  // a carry may reach infinity: right
}

std::string HistogramEvent(const std::string& tag, int64_t step, double wall_time,
                           const std::vector<double>& samples,
                           const std::vector<double>& bucket_limits) {
  if (bucket_limits.empty()) throw std::runtime_error("HistogramEvent: no bucket limits");
  tf::Event e = NewEvent(wall_time, step);
  tf::HistogramProto* h = AddValue(&e, tag)->mutable_histo();
  std::vector<double> counts(bucket_limits.size(), 0);
  double sum = 0, sum_squares = 0;
  for (double s : samples) {
    sum += s;
    sum_squares += s * s;
    const auto above = std::upper_bound(bucket_limits.begin(), bucket_limits.end(), s);
    counts[std::min<size_t>(above - bucket_limits.begin(), counts.size() - 1)] += 1;
  }
  if (!samples.empty()) {
    const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
    h->set_min(*lo);
    h->set_max(*hi);
  }
  h->set_num(static_cast<double>(samples.size()));
  h->set_sum(sum);
  h->set_sum_squares(sum_squares);
  h->mutable_bucket_limit()->Add(bucket_limits.begin(), bucket_limits.end());
  h->mutable_bucket()->Add(counts.begin(), counts.end());
  return Serialize(e);
}

std::string Tf2HistogramEvent(const std::string& tag, int64_t step, double wall_time,
                              const std::vector<std::array<double, 3>>& buckets,
                              bool with_metadata) {
  tf::Event e = NewEvent(wall_time, step);
  tf::Summary::Value* v = AddValue(&e, tag);
  tf::TensorProto* t = v->mutable_tensor();
  t->set_dtype(tf::DT_DOUBLE);
  t->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(buckets.size()));
  t->mutable_tensor_shape()->add_dim()->set_size(3);
  for (const auto& row : buckets) {
    for (double x : row)
      AppendLittleEndian(t->mutable_tensor_content(), std::bit_cast<uint64_t>(x));
  }
  if (with_metadata) SetPlugin(v, "histograms", tf::DATA_CLASS_TENSOR);
  return Serialize(e);
}

std::string TextEvent(const std::string& tag, int64_t step, double wall_time,
                      const std::vector<std::string>& lines, bool vector_shape) {
  tf::Event e = NewEvent(wall_time, step);
  tf::Summary::Value* v = AddValue(&e, tag);
  tf::TensorProto* t = v->mutable_tensor();
  t->set_dtype(tf::DT_STRING);
  tf::TensorShapeProto* shape = t->mutable_tensor_shape();
  if (vector_shape || lines.size() != 1) {
    shape->add_dim()->set_size(static_cast<int64_t>(lines.size()));
  }
  for (const std::string& line : lines) t->add_string_val(line);
  SetPlugin(v, "text", tf::DATA_CLASS_UNKNOWN);  // torch leaves data_class unset
  return Serialize(e);
}

std::string HParamsStartEvent(double wall_time,
                              const std::vector<std::pair<std::string, HParamValue>>& hparams,
                              bool placeholder_tensor) {
  hp::HParamsPluginData data;
  data.set_version(0);
  hp::SessionStartInfo* start = data.mutable_session_start_info();
  for (const auto& [name, value] : hparams) {
    std::visit(SetStructValue{&(*start->mutable_hparams())[name]}, value);
  }
  // TF2 hp.hparams also records the start time, and an empty float tensor stands in for a value.
  if (placeholder_tensor) start->set_start_time_secs(wall_time);
  tf::Event e = NewEvent(wall_time);
  tf::Summary::Value* v = AddHParamsValue(&e, "_hparams_/session_start_info", data);
  if (placeholder_tensor) {
    v->mutable_tensor()->set_dtype(tf::DT_FLOAT);
    v->mutable_tensor()->mutable_tensor_shape()->add_dim()->set_size(0);
  }
  return Serialize(e);
}

std::string HParamsExperimentEvent(double wall_time) {
  hp::HParamsPluginData data;
  data.set_version(0);
  data.set_experiment("");  // sets the oneof: serialized as an empty field 2
  tf::Event e = NewEvent(wall_time);
  AddHParamsValue(&e, "_hparams_/experiment", data);
  return Serialize(e);
}

std::string HParamsEndEvent(double wall_time) {
  hp::HParamsPluginData data;
  data.set_version(0);
  data.mutable_session_end_info()->set_status(1);
  tf::Event e = NewEvent(wall_time);
  AddHParamsValue(&e, "_hparams_/session_end_info", data);
  return Serialize(e);
}

std::string SessionLogEvent(int64_t step, double wall_time, int status,
                            const std::string& checkpoint_path) {
  tf::Event e = NewEvent(wall_time, step);
  tf::SessionLog* log = e.mutable_session_log();
  log->set_status(static_cast<tf::SessionLog::SessionStatus>(status));
  log->set_checkpoint_path(checkpoint_path);
  return Serialize(e);
}

std::string ImageEvent(const std::string& tag, int64_t step, double wall_time) {
  tf::Event e = NewEvent(wall_time, step);
  tf::Summary::Image* image = AddValue(&e, tag)->mutable_image();
  image->set_height(1);
  image->set_width(1);
  image->set_colorspace(1);  // grayscale
  image->set_encoded_image_string(kPng1x1, sizeof kPng1x1 - 1);
  return Serialize(e);
}

std::string GraphDefEvent(double wall_time, size_t bytes) {
  tf::Event e = NewEvent(wall_time);
  e.set_graph_def(std::string(bytes, 'g'));
  return Serialize(e);
}

std::string MultiScalarEvent(int64_t step, double wall_time,
                             const std::vector<std::pair<std::string, float>>& values) {
  tf::Event e = NewEvent(wall_time, step);
  for (const auto& [tag, value] : values) AddValue(&e, tag)->set_simple_value(value);
  return Serialize(e);
}

EventFileWriter::EventFileWriter(std::string path) : path_(std::move(path)) {
  const std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create directory for " + path_ + ": " + ec.message());
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot create " + path_);
}

void EventFileWriter::Add(const std::string& event) { tfrecord::AppendRecord(&buffer_, event); }

void EventFileWriter::Flush() { FlushPartial(buffer_.size()); }

void EventFileWriter::FlushPartial(size_t n) {
  if (n > buffer_.size()) {
    throw std::runtime_error("FlushPartial(" + std::to_string(n) + ") with only " +
                             std::to_string(buffer_.size()) + " bytes buffered for " + path_);
  }
  Append(buffer_.data(), n);
  buffer_.erase(0, n);
}

void EventFileWriter::Append(const char* data, size_t n) {
  std::ofstream out(path_, std::ios::binary | std::ios::app);
  out.write(data, static_cast<std::streamsize>(n));
  out.close();
  if (!out) throw std::runtime_error("cannot append to " + path_);
}

std::string EventFileName(int64_t secs, const std::string& host, int pid, int counter) {
  return "events.out.tfevents." + std::to_string(secs) + "." + host + "." + std::to_string(pid) +
         "." + std::to_string(counter);
}

}  // namespace tw::testing

// A test-only writer of realistic TensorBoard event files: TFRecord-framed tensorflow.Event
// protobufs laid out the way the real writers (PyTorch SummaryWriter, TF1 FileWriter,
// tensorboardX, TF2 tf.summary / Keras, the hparams plugin) lay them out. Tests, benchmarks and
// the example logdir generator use it; trainwatch itself never writes event files.
//
// Each builder returns one serialized Event. Errors (an unwritable path) throw
// std::runtime_error naming the path: this is test code, an edge of the program.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tw::testing {

// What torch >= 1.13 (tensorboard's EventFileWriter) puts in source_metadata.writer.
inline constexpr char kTorchSourceWriter[] = "tensorboard.summary.writer.event_file_writer";

// The first event of every file: file_version "brain.Event:2". Real torch >= 1.13 writes
// source_metadata (field 10) in this same event; pass `source_writer` to do the same.
std::string FileVersionEvent(double wall_time, const std::string& source_writer = "");
// An event holding only source_metadata (field 10) and no `what`: the decoder must accept
// source metadata that does not ride on the file_version event.
std::string SourceMetadataEvent(double wall_time, const std::string& writer);

// Summary.Value.simple_value: PyTorch, TF1 and tensorboardX scalars.
std::string SimpleScalarEvent(const std::string& tag, int64_t step, double wall_time, float value);

// TF2 tf.summary.scalar: DT_FLOAT rank-0 tensor, 4 little-endian bytes in tensor_content.
// TF2 writes the metadata (plugin "scalars", DATA_CLASS_SCALAR) with a tag's first value only.
std::string Tf2ScalarEvent(const std::string& tag, int64_t step, double wall_time, float value,
                           bool with_metadata);

// How a rank-0 tensor scalar carries its value: the dtype, and *Val (the typed repeated field)
// or *Content (little-endian bytes in tensor_content). Half and bfloat16 *Val put the 16-bit
// pattern in the int32 half_val field, as TensorFlow does for both dtypes.
enum class ScalarEncoding {
  kFloatContent,
  kFloatVal,
  kDoubleContent,
  kDoubleVal,
  kHalfVal,
  kHalfContent,
  kBfloat16Val,
  kBfloat16Content,
  kInt32Val,
  kInt64Val,
  kInt64Content,
  kBoolVal,
};
// `value` is converted to the encoding's type: float, half and bfloat16 round to nearest even
// (half and bfloat16 via float), integers truncate toward zero (pass integral values), bool is
// value != 0. Metadata (plugin "scalars", DATA_CLASS_SCALAR) only when `with_metadata`.
std::string TensorScalarEvent(const std::string& tag, int64_t step, double wall_time, double value,
                              ScalarEncoding enc, bool with_metadata);

// IEEE binary16 and bfloat16 bit patterns of `f`, rounded to nearest even; NaN stays a
// (quiet) NaN, overflow becomes infinity. Exposed so tests can state expected values.
uint16_t FloatToHalfBits(float f);
uint16_t FloatToBfloat16Bits(float f);

// Legacy HistogramProto (TF1 tf.summary.histogram, PyTorch add_histogram). min, max, num, sum
// and sum_squares come from `samples`; bucket[i] counts samples in
// [bucket_limits[i-1], bucket_limits[i]) as TensorFlow's C++ histogram does, and samples at or
// above the last limit land in the last bucket (real writers end with a huge last limit).
std::string HistogramEvent(const std::string& tag, int64_t step, double wall_time,
                           const std::vector<double>& samples,
                           const std::vector<double>& bucket_limits);

// TF2 tf.summary.histogram: DT_DOUBLE tensor of shape [k, 3], rows (left, right, count), in
// tensor_content. Metadata plugin "histograms", DATA_CLASS_TENSOR when `with_metadata`.
std::string Tf2HistogramEvent(const std::string& tag, int64_t step, double wall_time,
                              const std::vector<std::array<double, 3>>& buckets,
                              bool with_metadata);

// Text plugin: DT_STRING tensor, plugin "text". One line gives a rank-0 tensor
// (tf.summary.text); several give rank 1 [n]. `vector_shape` forces rank 1 for one line too,
// as torch add_text and the HF Trainer write it (shape [1]).
std::string TextEvent(const std::string& tag, int64_t step, double wall_time,
                      const std::vector<std::string>& lines, bool vector_shape = false);

// The hparams plugin's session start, as PyTorch add_hparams / Lightning log_hyperparams write
// it: tag "_hparams_/session_start_info", metadata plugin "hparams" whose content is a
// serialized HParamsPluginData{version 0, session_start_info{hparams}}, and no value at all.
// `placeholder_tensor` writes TF2 hp.hparams' form instead: a DT_FLOAT tensor of shape [0] as
// the value, and start_time_secs set. Write integer hparams as doubles (32.0): an int converts
// to none of the alternatives without narrowing, so the variant will not take it.
using HParamValue = std::variant<double, std::string, bool>;
std::string HParamsStartEvent(double wall_time,
                              const std::vector<std::pair<std::string, HParamValue>>& hparams,
                              bool placeholder_tensor);
// "_hparams_/experiment" with empty experiment bytes, PyTorch style (no value).
std::string HParamsExperimentEvent(double wall_time);
// "_hparams_/session_end_info" with status 1 (STATUS_SUCCESS), PyTorch style (no value).
std::string HParamsEndEvent(double wall_time);

// SessionLog: status 1 START (what a PyTorch purge_step resume writes), 2 STOP, 3 CHECKPOINT.
std::string SessionLogEvent(int64_t step, double wall_time, int status,
                            const std::string& checkpoint_path = "");
// Summary.Image holding a real 1x1 grayscale PNG (67 bytes).
std::string ImageEvent(const std::string& tag, int64_t step, double wall_time);
// graph_def of `bytes` filler bytes (not a parseable GraphDef: nothing reads it).
std::string GraphDefEvent(double wall_time, size_t bytes);
// TF1 merged summaries: one Summary with a simple_value per (tag, value), in order.
std::string MultiScalarEvent(int64_t step, double wall_time,
                             const std::vector<std::pair<std::string, float>>& values);

// Appends framed records to a file the way a real writer does: buffer, then flush, so a test
// can stop between (or in the middle of) records and let a reader see a growing file.
class EventFileWriter {
 public:
  // Creates (or truncates) the file, and its directory as real writers do.
  explicit EventFileWriter(std::string path);
  // Buffers one framed record.
  void Add(const std::string& event);
  // Appends everything buffered to the file (open, append, close).
  void Flush();
  // Appends only the first n buffered bytes and keeps the rest buffered: cuts a record in the
  // middle, as a writer caught mid-flush leaves it. Throws if n > buffered().
  void FlushPartial(size_t n);
  size_t buffered() const { return buffer_.size(); }
  const std::string& path() const { return path_; }

 private:
  void Append(const char* data, size_t n);

  std::string path_;
  std::string buffer_;
};

// The conventional name "events.out.tfevents.<secs>.<host>.<pid>.<counter>" (the name only;
// join it to a directory). TF2 writers add ".v2"; append it where that matters.
std::string EventFileName(int64_t secs, const std::string& host, int pid, int counter);

}  // namespace tw::testing

// A hand-written decoder for tensorflow.Event that reads only the fields trainwatch uses
// and skips the rest without parsing it (graph defs, image bytes). The result is a view:
// every string_view points into the record bytes, so an Event is valid only while the
// record is. One Event object is meant to be reused across records (no allocation once
// its vectors have grown). tests/decode_test.cc cross-checks it against libprotobuf.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tw::decode {

// tensorflow.DataType values we interpret.
enum DType : int32_t {
  kDtFloat = 1, kDtDouble = 2, kDtInt32 = 3, kDtUint8 = 4, kDtInt16 = 5, kDtInt8 = 6,
  kDtString = 7, kDtInt64 = 9, kDtBool = 10, kDtBfloat16 = 14, kDtHalf = 19,
  kDtUint32 = 22, kDtUint64 = 23,
};

struct TensorView {
  int32_t dtype = 0;
  bool has_shape = false;
  int rank = 0;                  // number of dims in tensor_shape
  int64_t dims[4] = {0, 0, 0, 0};  // the first four dims
  std::string_view content;      // tensor_content
  // The first typed *_val field seen: its field number, wire type and raw value (the
  // packed payload for wire type 2, the 4/8 bytes for fixed, the value for a varint).
  uint32_t typed_field = 0;
  uint32_t typed_wire = 0;
  std::string_view typed_raw;
  uint64_t typed_varint = 0;
  uint32_t string_first = 0;     // string_val entries: [first, first+count) in Event::strings
  uint32_t string_count = 0;
};

enum class ValueCase : uint8_t { kNone, kSimple, kOldHisto, kImage, kHisto, kAudio, kTensor };

struct SummaryValue {
  std::string_view tag;
  bool has_metadata = false;
  std::string_view plugin_name;
  std::string_view plugin_content;
  int32_t data_class = 0;  // 1 scalar, 2 tensor, 3 blob sequence
  ValueCase value_case = ValueCase::kNone;
  float simple_value = 0;
  std::string_view raw;  // HistogramProto / Image / Audio / old histogram bytes
  TensorView tensor;
};

enum class What : uint8_t {
  kNone, kFileVersion, kGraphDef, kSummary, kLogMessage, kSessionLog, kTaggedRunMetadata,
  kMetaGraphDef,
};

struct Event {
  double wall_time = 0;
  int64_t step = 0;
  What what = What::kNone;
  std::string_view file_version;
  int32_t session_status = 0;  // 1 START, 2 STOP, 3 CHECKPOINT
  std::string_view checkpoint_path;
  std::string_view log_message;
  bool has_source_metadata = false;
  std::string_view source_writer;
  std::vector<SummaryValue> values;
  std::vector<std::string_view> strings;  // pool for TensorView::string_*

  void Clear();
};

// Decodes `bytes` into `*event` (cleared first). A Corrupt status names the message and
// field that did not parse; the caller adds the file and offset.
Status DecodeEvent(std::string_view bytes, Event* event);

// The same for a bare HistogramProto (Summary.Value.histo).
struct HistogramView {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::string_view bucket_limit;  // packed doubles (or one fixed64 when unpacked)
  std::string_view bucket;
  std::vector<double> limits, counts;  // filled by DecodeHistogram
};
Status DecodeHistogram(std::string_view bytes, HistogramView* out);

}  // namespace tw::decode

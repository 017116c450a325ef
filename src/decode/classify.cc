#include "decode/classify.h"

#include <cmath>
#include <cstring>

#include "decode/wire.h"

namespace tw::decode {
namespace {

constexpr std::string_view kScalarsPlugin = "scalars";
constexpr std::string_view kHistogramsPlugin = "histograms";
constexpr std::string_view kTextPlugin = "text";
constexpr std::string_view kHParamsPlugin = "hparams";
constexpr std::string_view kImagesPlugin = "images";
constexpr std::string_view kAudioPlugin = "audio";
constexpr std::string_view kSessionStartTag = "_hparams_/session_start_info";
constexpr int32_t kDataClassScalar = 1;

template <typename T>
T LoadLe(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

size_t DTypeSize(int32_t dtype) {
  switch (dtype) {
    case kDtFloat: case kDtInt32: case kDtUint32: return 4;
    case kDtDouble: case kDtInt64: case kDtUint64: return 8;
    case kDtHalf: case kDtBfloat16: case kDtInt16: return 2;
    case kDtInt8: case kDtUint8: case kDtBool: return 1;
    default: return 0;
  }
}

// Element `i` of a numeric tensor from tensor_content.
double ContentElement(const TensorView& t, size_t i) {
  const char* p = t.content.data() + i * DTypeSize(t.dtype);
  switch (t.dtype) {
    case kDtFloat: return LoadLe<float>(p);
    case kDtDouble: return LoadLe<double>(p);
    case kDtInt32: return LoadLe<int32_t>(p);
    case kDtUint32: return LoadLe<uint32_t>(p);
    case kDtInt64: return static_cast<double>(LoadLe<int64_t>(p));
    case kDtUint64: return static_cast<double>(LoadLe<uint64_t>(p));
    case kDtHalf: return HalfToFloat(LoadLe<uint16_t>(p));
    case kDtBfloat16: return Bfloat16ToFloat(LoadLe<uint16_t>(p));
    case kDtInt16: return LoadLe<int16_t>(p);
    case kDtInt8: return LoadLe<int8_t>(p);
    case kDtUint8: case kDtBool: return static_cast<unsigned char>(*p);
    default: return NAN;
  }
}

// The first element of the typed *_val field, read by the field's declared type.
bool TypedFirst(const TensorView& t, double* out) {
  const uint32_t f = t.typed_field;
  const bool packed = t.typed_wire == wire::kLengthDelimited;
  if (f == 5 || f == 6) {  // float_val / double_val
    const size_t n = f == 5 ? 4 : 8;
    if (packed) {
      if (t.typed_raw.size() < n) return false;
      *out = n == 4 ? LoadLe<float>(t.typed_raw.data()) : LoadLe<double>(t.typed_raw.data());
    } else {
      uint64_t raw = t.typed_varint;
      if (n == 4) {
        float fl;
        uint32_t r32 = static_cast<uint32_t>(raw);
        std::memcpy(&fl, &r32, 4);
        *out = fl;
      } else {
        double d;
        std::memcpy(&d, &raw, 8);
        *out = d;
      }
    }
    return true;
  }
  // Varint fields: int_val (7), int64_val (10), bool_val (11), half_val (13), uint32 (16), uint64 (17).
  uint64_t v = t.typed_varint;
  if (packed) {
    wire::Reader r(t.typed_raw);
    if (!r.ReadVarint(&v)) return false;
  }
  switch (f) {
    case 7: *out = static_cast<int32_t>(v); return true;
    case 10: *out = static_cast<double>(static_cast<int64_t>(v)); return true;
    case 11: *out = v != 0; return true;
    case 13:
      *out = t.dtype == kDtBfloat16 ? Bfloat16ToFloat(static_cast<uint16_t>(v))
                                    : HalfToFloat(static_cast<uint16_t>(v));
      return true;
    case 16: case 17: *out = static_cast<double>(v); return true;
    default: return false;
  }
}

bool IsNumeric(int32_t dtype) { return DTypeSize(dtype) != 0; }

Status ScalarFromTensor(const TensorView& t, double* out) {
  if (!IsNumeric(t.dtype))
    return Corrupt("scalar tensor has non-numeric dtype " + std::to_string(t.dtype));
  if (!t.content.empty()) {
    if (t.content.size() < DTypeSize(t.dtype))
      return Corrupt("scalar tensor_content has " + std::to_string(t.content.size()) +
                     " bytes, dtype " + std::to_string(t.dtype) + " needs " +
                     std::to_string(DTypeSize(t.dtype)));
    *out = ContentElement(t, 0);
    return Status::Ok();
  }
  if (t.typed_field != 0 && TypedFirst(t, out)) return Status::Ok();
  // A proto3 tensor whose only element is zero may carry no value bytes at all only if
  // the writer wrote an empty typed list; real writers always write the element.
  return Corrupt("scalar tensor carries no value");
}

Status HistogramFromTensor(const TensorView& t, Histogram* h) {
  if (!t.has_shape || t.rank != 2 || t.dims[1] != 3 || t.dims[0] < 0)
    return Corrupt("histogram tensor is not of shape [k, 3]");
  const size_t k = static_cast<size_t>(t.dims[0]);
  const size_t esize = DTypeSize(t.dtype);
  if (esize == 0 || t.content.size() != k * 3 * esize)
    return Corrupt("histogram tensor_content has " + std::to_string(t.content.size()) +
                   " bytes for " + std::to_string(k) + " buckets");
  h->buckets.resize(k);
  h->count = h->sum = 0;
  for (size_t i = 0; i < k; ++i) {
    auto& b = h->buckets[i];
    for (size_t j = 0; j < 3; ++j) b[j] = ContentElement(t, i * 3 + j);
    h->count += b[2];
    h->sum += b[2] * (b[0] + b[1]) / 2;  // the tensor form keeps no exact sum
  }
  h->min = k ? h->buckets.front()[0] : 0;
  h->max = k ? h->buckets.back()[1] : 0;
  return Status::Ok();
}

Status HistogramFromProto(std::string_view raw, Histogram* h) {
  HistogramView v;
  TW_RETURN_IF_ERROR(DecodeHistogram(raw, &v));
  h->count = v.num;
  h->sum = v.sum;
  h->min = v.min;
  h->max = v.max;
  h->buckets.clear();
  double left = v.min;
  for (size_t i = 0; i < v.limits.size(); ++i) {
    // Empty buckets carry no information and TF writers emit thousands of them.
    if (v.counts[i] != 0) h->buckets.push_back({left, v.limits[i], v.counts[i]});
    left = v.limits[i];
  }
  return Status::Ok();
}

// google.protobuf.Value: null 1, number 2, string 3, bool 4 (struct/list not used by hparams).
void DecodeStructValue(std::string_view bytes, HParam* p) {
  wire::Reader r(bytes);
  uint32_t f = 0, wt = 0;
  while (r.NextField(&f, &wt)) {
    if (f == 2 && wt == wire::kFixed64) {
      p->type = HParam::Type::kNumber;
      r.ReadDouble(&p->number);
    } else if (f == 3 && wt == wire::kLengthDelimited) {
      std::string_view s;
      if (r.ReadBytes(&s)) {
        p->type = HParam::Type::kString;
        p->text.assign(s);
      }
    } else if (f == 4 && wt == wire::kVarint) {
      uint64_t b;
      if (r.ReadVarint(&b)) {
        p->type = HParam::Type::kBool;
        p->number = b != 0;
      }
    } else {
      r.Skip(wt);
    }
  }
}

// HParamsPluginData{session_start_info(3){hparams(1): map<string, Value>}}.
Status DecodeSessionStart(std::string_view content, std::vector<HParam>* out) {
  wire::Reader r(content);
  uint32_t f = 0, wt = 0;
  std::string_view ssi;
  bool found = false;
  while (r.NextField(&f, &wt)) {
    if (f == 3 && wt == wire::kLengthDelimited) {
      found = r.ReadBytes(&ssi);
    } else {
      r.Skip(wt);
    }
  }
  if (!r.ok()) return Corrupt("malformed HParamsPluginData");
  if (!found) return Status::Ok();
  wire::Reader s(ssi);
  while (s.NextField(&f, &wt)) {
    if (f != 1 || wt != wire::kLengthDelimited) {
      s.Skip(wt);
      continue;
    }
    std::string_view entry;
    if (!s.ReadBytes(&entry)) break;
    HParam p;
    wire::Reader e(entry);
    uint32_t ef = 0, ewt = 0;
    while (e.NextField(&ef, &ewt)) {
      std::string_view b;
      if (ef == 1 && ewt == wire::kLengthDelimited && e.ReadBytes(&b)) {
        p.key.assign(b);
      } else if (ef == 2 && ewt == wire::kLengthDelimited && e.ReadBytes(&b)) {
        DecodeStructValue(b, &p);
      } else {
        e.Skip(ewt);
      }
    }
    if (!e.ok()) return Corrupt("malformed hparams map entry");
    out->push_back(std::move(p));
  }
  if (!s.ok()) return Corrupt("malformed SessionStartInfo");
  return Status::Ok();
}

}  // namespace

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kScalar: return "scalar";
    case Kind::kHistogram: return "histogram";
    case Kind::kText: return "text";
    case Kind::kHParamsStart: return "hparams";
    case Kind::kHParamsOther: return "hparams_other";
    case Kind::kImage: return "image";
    case Kind::kAudio: return "audio";
    case Kind::kOtherTensor: return "tensor";
  }
  return "unknown";
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  }
  return sign ? -v : v;
}

float Bfloat16ToFloat(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

Status Classify(const SummaryValue& v, const std::vector<std::string_view>& strings,
                const TagPlugin* remembered, Classified* out) {
  std::string_view plugin = v.plugin_name;
  int32_t data_class = v.data_class;
  if (!v.has_metadata && remembered) {
    plugin = remembered->plugin_name;
    data_class = remembered->data_class;
  }
  switch (v.value_case) {
    case ValueCase::kSimple:
      out->kind = Kind::kScalar;
      out->scalar = v.simple_value;
      return Status::Ok();
    case ValueCase::kHisto:
      out->kind = Kind::kHistogram;
      return HistogramFromProto(v.raw, &out->histogram);
    case ValueCase::kImage: out->kind = Kind::kImage; return Status::Ok();
    case ValueCase::kAudio: out->kind = Kind::kAudio; return Status::Ok();
    case ValueCase::kOldHisto: out->kind = Kind::kOtherTensor; return Status::Ok();
    case ValueCase::kNone:
    case ValueCase::kTensor: break;
  }
  // hparams summaries carry their data in the metadata; the value is absent or a placeholder.
  if (plugin == kHParamsPlugin) {
    out->kind = v.tag == kSessionStartTag ? Kind::kHParamsStart : Kind::kHParamsOther;
    out->hparams.clear();
    if (out->kind == Kind::kHParamsStart) return DecodeSessionStart(v.plugin_content, &out->hparams);
    return Status::Ok();
  }
  if (v.value_case == ValueCase::kNone) {
    out->kind = Kind::kOtherTensor;
    return Status::Ok();
  }
  const TensorView& t = v.tensor;
  if (plugin == kHistogramsPlugin) {
    out->kind = Kind::kHistogram;
    return HistogramFromTensor(t, &out->histogram);
  }
  if (plugin == kTextPlugin || (plugin.empty() && t.dtype == kDtString && t.rank == 0)) {
    out->kind = Kind::kText;
    out->text.clear();
    for (uint32_t i = 0; i < t.string_count; ++i) {
      if (i) out->text += '\n';
      out->text.append(strings[t.string_first + i]);
    }
    return Status::Ok();
  }
  if (plugin == kImagesPlugin) { out->kind = Kind::kImage; return Status::Ok(); }
  if (plugin == kAudioPlugin) { out->kind = Kind::kAudio; return Status::Ok(); }
  const bool rank0 = !t.has_shape || t.rank == 0;
  if ((plugin == kScalarsPlugin || data_class == kDataClassScalar ||
       (plugin.empty() && IsNumeric(t.dtype))) && rank0) {
    out->kind = Kind::kScalar;
    return ScalarFromTensor(t, &out->scalar);
  }
  out->kind = Kind::kOtherTensor;
  return Status::Ok();
}

}  // namespace tw::decode

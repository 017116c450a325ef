#include "decode/event.h"

#include <cstring>
#include <string>

#include "decode/wire.h"

namespace tw::decode {
namespace {

using wire::Reader;

Status Malformed(const char* message, uint32_t field) {
  return Corrupt(std::string("malformed ") + message + " (field " + std::to_string(field) + ")");
}

bool DecodeShape(std::string_view bytes, TensorView* t) {
  Reader r(bytes);
  uint32_t f = 0, wt = 0;
  t->has_shape = true;
  while (r.NextField(&f, &wt)) {
    if (f == 2 && wt == wire::kLengthDelimited) {  // Dim
      std::string_view dim;
      if (!r.ReadBytes(&dim)) return false;
      int64_t size = 0;
      Reader d(dim);
      uint32_t df = 0, dwt = 0;
      while (d.NextField(&df, &dwt)) {
        if (df == 1 && dwt == wire::kVarint) {
          uint64_t v;
          if (!d.ReadVarint(&v)) return false;
          size = static_cast<int64_t>(v);
        } else if (!d.Skip(dwt)) {
          return false;
        }
      }
      if (!d.ok()) return false;
      if (t->rank < 4) t->dims[t->rank] = size;
      ++t->rank;
    } else if (!r.Skip(wt)) {
      return false;
    }
  }
  return r.ok();
}

Status DecodeTensor(std::string_view bytes, TensorView* t, std::vector<std::string_view>* pool) {
  Reader r(bytes);
  uint32_t f = 0, wt = 0;
  t->string_first = static_cast<uint32_t>(pool->size());
  while (r.NextField(&f, &wt)) {
    switch (f) {
      case 1: {
        uint64_t v;
        if (wt != wire::kVarint || !r.ReadVarint(&v)) return Malformed("TensorProto.dtype", f);
        t->dtype = static_cast<int32_t>(v);
        break;
      }
      case 2: {
        std::string_view shape;
        if (wt != wire::kLengthDelimited || !r.ReadBytes(&shape) || !DecodeShape(shape, t))
          return Malformed("TensorProto.tensor_shape", f);
        break;
      }
      case 4:
        if (wt != wire::kLengthDelimited || !r.ReadBytes(&t->content))
          return Malformed("TensorProto.tensor_content", f);
        break;
      case 8: {
        std::string_view s;
        if (wt != wire::kLengthDelimited || !r.ReadBytes(&s))
          return Malformed("TensorProto.string_val", f);
        pool->push_back(s);
        ++t->string_count;
        break;
      }
      case 5: case 6: case 7: case 10: case 11: case 13: case 16: case 17: {
        if (t->typed_field != 0) {  // keep the first; scalars have one element
          if (!r.Skip(wt)) return Malformed("TensorProto", f);
          break;
        }
        t->typed_field = f;
        t->typed_wire = wt;
        bool ok = true;
        if (wt == wire::kLengthDelimited) {
          ok = r.ReadBytes(&t->typed_raw);
        } else if (wt == wire::kVarint) {
          ok = r.ReadVarint(&t->typed_varint);
        } else if (wt == wire::kFixed32) {
          uint32_t raw = 0;
          ok = r.ReadFixed32(&raw);
          t->typed_varint = raw;
        } else if (wt == wire::kFixed64) {
          ok = r.ReadFixed64(&t->typed_varint);
        } else {
          ok = false;
        }
        if (!ok) return Malformed("TensorProto typed value", f);
        break;
      }
      default:
        if (!r.Skip(wt)) return Malformed("TensorProto", f);
    }
  }
  if (!r.ok()) return Malformed("TensorProto", 0);
  return Status::Ok();
}

Status DecodeMetadata(std::string_view bytes, SummaryValue* v) {
  Reader r(bytes);
  uint32_t f = 0, wt = 0;
  v->has_metadata = true;
  while (r.NextField(&f, &wt)) {
    if (f == 1 && wt == wire::kLengthDelimited) {  // PluginData
      std::string_view pd;
      if (!r.ReadBytes(&pd)) return Malformed("SummaryMetadata.plugin_data", f);
      Reader p(pd);
      uint32_t pf = 0, pwt = 0;
      while (p.NextField(&pf, &pwt)) {
        if (pf == 1 && pwt == wire::kLengthDelimited) {
          if (!p.ReadBytes(&v->plugin_name)) break;
        } else if (pf == 2 && pwt == wire::kLengthDelimited) {
          if (!p.ReadBytes(&v->plugin_content)) break;
        } else if (!p.Skip(pwt)) {
          break;
        }
      }
      if (!p.ok()) return Malformed("SummaryMetadata.PluginData", pf);
    } else if (f == 4 && wt == wire::kVarint) {
      uint64_t dc;
      if (!r.ReadVarint(&dc)) return Malformed("SummaryMetadata.data_class", f);
      v->data_class = static_cast<int32_t>(dc);
    } else if (!r.Skip(wt)) {
      return Malformed("SummaryMetadata", f);
    }
  }
  if (!r.ok()) return Malformed("SummaryMetadata", 0);
  return Status::Ok();
}

Status DecodeValue(std::string_view bytes, SummaryValue* v, std::vector<std::string_view>* pool) {
  Reader r(bytes);
  uint32_t f = 0, wt = 0;
  while (r.NextField(&f, &wt)) {
    switch (f) {
      case 1:
        if (wt != wire::kLengthDelimited || !r.ReadBytes(&v->tag))
          return Malformed("Summary.Value.tag", f);
        break;
      case 2:
        if (wt != wire::kFixed32 || !r.ReadFloat(&v->simple_value))
          return Malformed("Summary.Value.simple_value", f);
        v->value_case = ValueCase::kSimple;
        break;
      case 3: case 4: case 5: case 6:
        if (wt != wire::kLengthDelimited || !r.ReadBytes(&v->raw))
          return Malformed("Summary.Value", f);
        v->value_case = f == 3   ? ValueCase::kOldHisto
                        : f == 4 ? ValueCase::kImage
                        : f == 5 ? ValueCase::kHisto
                                 : ValueCase::kAudio;
        break;
      case 8: {
        std::string_view t;
        if (wt != wire::kLengthDelimited || !r.ReadBytes(&t))
          return Malformed("Summary.Value.tensor", f);
        v->value_case = ValueCase::kTensor;
        v->tensor = TensorView{};
        TW_RETURN_IF_ERROR(DecodeTensor(t, &v->tensor, pool));
        break;
      }
      case 9: {
        std::string_view m;
        if (wt != wire::kLengthDelimited || !r.ReadBytes(&m))
          return Malformed("Summary.Value.metadata", f);
        TW_RETURN_IF_ERROR(DecodeMetadata(m, v));
        break;
      }
      default:
        if (!r.Skip(wt)) return Malformed("Summary.Value", f);
    }
  }
  if (!r.ok()) return Malformed("Summary.Value", 0);
  return Status::Ok();
}

Status DecodeSummary(std::string_view bytes, Event* ev) {
  Reader r(bytes);
  uint32_t f = 0, wt = 0;
  while (r.NextField(&f, &wt)) {
    if (f == 1 && wt == wire::kLengthDelimited) {
      std::string_view vb;
      if (!r.ReadBytes(&vb)) return Malformed("Summary.value", f);
      ev->values.emplace_back();
      TW_RETURN_IF_ERROR(DecodeValue(vb, &ev->values.back(), &ev->strings));
    } else if (!r.Skip(wt)) {
      return Malformed("Summary", f);
    }
  }
  if (!r.ok()) return Malformed("Summary", 0);
  return Status::Ok();
}

Status DecodeSessionLog(std::string_view bytes, Event* ev) {
  Reader r(bytes);
  uint32_t f = 0, wt = 0;
  while (r.NextField(&f, &wt)) {
    if (f == 1 && wt == wire::kVarint) {
      uint64_t s;
      if (!r.ReadVarint(&s)) break;
      ev->session_status = static_cast<int32_t>(s);
    } else if (f == 2 && wt == wire::kLengthDelimited) {
      if (!r.ReadBytes(&ev->checkpoint_path)) break;
    } else if (!r.Skip(wt)) {
      break;
    }
  }
  return r.ok() ? Status::Ok() : Malformed("SessionLog", f);
}

Status DecodeStringField(std::string_view bytes, uint32_t want, std::string_view* out,
                         const char* what) {
  Reader r(bytes);
  uint32_t f = 0, wt = 0;
  while (r.NextField(&f, &wt)) {
    if (f == want && wt == wire::kLengthDelimited) {
      if (!r.ReadBytes(out)) break;
    } else if (!r.Skip(wt)) {
      break;
    }
  }
  return r.ok() ? Status::Ok() : Malformed(what, f);
}

}  // namespace

void Event::Clear() {
  wall_time = 0;
  step = 0;
  what = What::kNone;
  file_version = {};
  session_status = 0;
  checkpoint_path = {};
  log_message = {};
  has_source_metadata = false;
  source_writer = {};
  values.clear();
  strings.clear();
}

Status DecodeEvent(std::string_view bytes, Event* ev) {
  ev->Clear();
  Reader r(bytes);
  uint32_t f = 0, wt = 0;
  while (r.NextField(&f, &wt)) {
    std::string_view sub;
    switch (f) {
      case 1:
        if (wt != wire::kFixed64 || !r.ReadDouble(&ev->wall_time))
          return Malformed("Event.wall_time", f);
        break;
      case 2: {
        uint64_t step;
        if (wt != wire::kVarint || !r.ReadVarint(&step)) return Malformed("Event.step", f);
        ev->step = static_cast<int64_t>(step);
        break;
      }
      case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 10:
        if (wt != wire::kLengthDelimited || !r.ReadBytes(&sub)) return Malformed("Event", f);
        if (f == 3) {
          ev->what = What::kFileVersion;
          ev->file_version = sub;
        } else if (f == 4) {
          ev->what = What::kGraphDef;
        } else if (f == 5) {
          ev->what = What::kSummary;
          TW_RETURN_IF_ERROR(DecodeSummary(sub, ev));
        } else if (f == 6) {
          ev->what = What::kLogMessage;
          TW_RETURN_IF_ERROR(DecodeStringField(sub, 2, &ev->log_message, "LogMessage"));
        } else if (f == 7) {
          ev->what = What::kSessionLog;
          TW_RETURN_IF_ERROR(DecodeSessionLog(sub, ev));
        } else if (f == 8) {
          ev->what = What::kTaggedRunMetadata;
        } else if (f == 9) {
          ev->what = What::kMetaGraphDef;
        } else {
          ev->has_source_metadata = true;
          TW_RETURN_IF_ERROR(DecodeStringField(sub, 1, &ev->source_writer, "SourceMetadata"));
        }
        break;
      default:
        if (!r.Skip(wt)) return Malformed("Event", f);
    }
  }
  if (!r.ok()) return Malformed("Event", 0);
  return Status::Ok();
}

namespace {
// A repeated double, packed (wire type 2) or a single unpacked fixed64.
bool AppendDoubles(std::string_view packed, std::vector<double>* out) {
  if (packed.size() % 8 != 0) return false;
  const size_t n = packed.size() / 8;
  const size_t at = out->size();
  out->resize(at + n);
  if (n) std::memcpy(out->data() + at, packed.data(), packed.size());
  return true;
}
}  // namespace

Status DecodeHistogram(std::string_view bytes, HistogramView* h) {
  h->limits.clear();
  h->counts.clear();
  Reader r(bytes);
  uint32_t f = 0, wt = 0;
  while (r.NextField(&f, &wt)) {
    if (f >= 1 && f <= 5 && wt == wire::kFixed64) {
      double* fields[] = {&h->min, &h->max, &h->num, &h->sum, &h->sum_squares};
      if (!r.ReadDouble(fields[f - 1])) break;
    } else if ((f == 6 || f == 7) && wt == wire::kLengthDelimited) {
      std::string_view packed;
      if (!r.ReadBytes(&packed) || !AppendDoubles(packed, f == 6 ? &h->limits : &h->counts))
        return Malformed("HistogramProto", f);
    } else if ((f == 6 || f == 7) && wt == wire::kFixed64) {
      double d;
      if (!r.ReadDouble(&d)) break;
      (f == 6 ? h->limits : h->counts).push_back(d);
    } else if (!r.Skip(wt)) {
      break;
    }
  }
  if (!r.ok()) return Malformed("HistogramProto", f);
  if (h->limits.size() != h->counts.size())
    return Corrupt("malformed HistogramProto: " + std::to_string(h->limits.size()) +
                   " bucket limits but " + std::to_string(h->counts.size()) + " counts");
  return Status::Ok();
}

}  // namespace tw::decode

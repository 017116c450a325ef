#include "wandb/record.h"

#include <string>

#include "decode/wire.h"

namespace tw::wandb {
namespace {

using wire::Reader;

// Calls fn(reader, field, wire_type) for each field of `bytes`; fn returns false when the
// field does not parse, or skips it itself. Unknown fields are skipped here when fn says
// it did not take them (returns true without reading is not allowed: use Skip).
template <typename Fn>
bool ForFields(std::string_view bytes, Fn fn) {
  Reader r(bytes);
  uint32_t f = 0, wt = 0;
  while (r.NextField(&f, &wt))
    if (!fn(r, f, wt)) return false;
  return r.ok();
}

bool Str(Reader& r, uint32_t wt, std::string_view* out) {
  return wt == wire::kLengthDelimited && r.ReadBytes(out);
}
bool Int(Reader& r, uint32_t wt, int64_t* out) {
  uint64_t v;
  if (wt != wire::kVarint || !r.ReadVarint(&v)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

// google.protobuf.Timestamp as unix seconds.
bool Timestamp(Reader& r, uint32_t wt, double* out) {
  std::string_view b;
  if (!Str(r, wt, &b)) return false;
  int64_t secs = 0, nanos = 0;
  const bool ok = ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    if (f == 1) return Int(t, w, &secs);
    if (f == 2) return Int(t, w, &nanos);
    return t.Skip(w);
  });
  *out = static_cast<double>(secs) + static_cast<double>(static_cast<int32_t>(nanos)) * 1e-9;
  return ok;
}

// HistoryItem, StatsItem, ConfigItem, SummaryItem: key 1, nested_key 2, value_json 16.
bool ReadItem(Reader& r, uint32_t wt, Record* out, bool removed) {
  std::string_view b;
  if (!Str(r, wt, &b)) return false;
  Item item;
  item.removed = removed;
  item.first = static_cast<uint32_t>(out->parts.size());
  const bool ok = ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    if (f == 1) return Str(t, w, &item.key);
    if (f == 2) {
      std::string_view part;
      if (!Str(t, w, &part)) return false;
      out->parts.push_back(part);
      ++item.count;
      return true;
    }
    if (f == 16) return Str(t, w, &item.value_json);
    return t.Skip(w);
  });
  out->items.push_back(item);
  return ok;
}

// ConfigRecord / SummaryRecord: update 1, remove 2.
bool Updates(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    if (f == 1 || f == 2) return ReadItem(t, w, out, f == 2);
    return t.Skip(w);
  });
}

bool History(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    if (f == 1) return ReadItem(t, w, out, false);
    if (f == 2) {  // HistoryStep { num = 1 }
      std::string_view s;
      if (!Str(t, w, &s)) return false;
      out->has_step = true;
      return ForFields(s, [&](Reader& u, uint32_t g, uint32_t x) {
        return g == 1 ? Int(u, x, &out->step) : u.Skip(x);
      });
    }
    return t.Skip(w);
  });
}

bool Stats(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    if (f == 2) return Timestamp(t, w, &out->timestamp);
    if (f == 3) return ReadItem(t, w, out, false);
    return t.Skip(w);
  });
}

bool Run(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    switch (f) {
      case 1: return Str(t, w, &out->run_id);
      case 2: return Str(t, w, &out->entity);
      case 3: return Str(t, w, &out->project);
      case 4: {  // ConfigRecord
        std::string_view c;
        return Str(t, w, &c) && Updates(c, out);
      }
      case 6: return Str(t, w, &out->run_group);
      case 7: return Str(t, w, &out->job_type);
      case 8: return Str(t, w, &out->display_name);
      case 13: return Str(t, w, &out->host);
      case 14: return Int(t, w, &out->starting_step);
      case 17: return Timestamp(t, w, &out->start_time);
      case 18: {
        int64_t v;
        if (!Int(t, w, &v)) return false;
        out->resumed = v != 0;
        return true;
      }
      default: return t.Skip(w);
    }
  });
}

bool Exit(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    int64_t v;
    if (f == 1 || f == 2) {
      if (!Int(t, w, &v)) return false;
      (f == 1 ? out->exit_code : out->runtime) = static_cast<int32_t>(v);
      return true;
    }
    return t.Skip(w);
  });
}

// HeaderRecord { VersionInfo version_info = 1 { string producer = 1; } } (SDK >= 0.15).
bool Header(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    if (f != 1) return t.Skip(w);
    std::string_view v;
    return Str(t, w, &v) && ForFields(v, [&](Reader& u, uint32_t g, uint32_t x) {
             return g == 1 ? Str(u, x, &out->version) : u.Skip(x);
           });
  });
}

// TelemetryRecord: cli_version = 5.
bool Telemetry(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    return f == 5 ? Str(t, w, &out->version) : t.Skip(w);
  });
}

bool Metric(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    switch (f) {
      case 1: return Str(t, w, &out->metric_name);
      case 2: return Str(t, w, &out->metric_glob);
      case 4: return Str(t, w, &out->step_metric);
      case 6: {  // MetricOptions { step_sync = 1 }
        std::string_view o;
        return Str(t, w, &o) && ForFields(o, [&](Reader& u, uint32_t g, uint32_t x) {
                 if (g != 1) return u.Skip(x);
                 int64_t v;
                 if (!Int(u, x, &v)) return false;
                 out->step_sync = v != 0;
                 return true;
               });
      }
      case 8: {
        int64_t v;
        if (!Int(t, w, &v)) return false;
        out->goal = static_cast<int32_t>(v);
        return true;
      }
      default: return t.Skip(w);
    }
  });
}

bool Alert(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    if (f == 1) return Str(t, w, &out->alert_title);
    if (f == 2) return Str(t, w, &out->alert_text);
    if (f == 3) return Str(t, w, &out->alert_level);
    return t.Skip(w);
  });
}

bool Output(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    if (f == 2) return Timestamp(t, w, &out->timestamp);
    if (f == 3) return Str(t, w, &out->line);
    return t.Skip(w);
  });
}

bool TbRecord(std::string_view b, Record* out) {
  return ForFields(b, [&](Reader& t, uint32_t f, uint32_t w) {
    return f == 1 ? Str(t, w, &out->tb_log_dir) : t.Skip(w);
  });
}

RecordKind KindOf(uint32_t field) {
  switch (field) {
    case 2: return RecordKind::kHistory;
    case 3: return RecordKind::kSummary;
    case 4: return RecordKind::kOutput;
    case 5: return RecordKind::kConfig;
    case 6: return RecordKind::kFiles;
    case 7: return RecordKind::kStats;
    case 8: return RecordKind::kArtifact;
    case 9: return RecordKind::kTbRecord;
    case 10: return RecordKind::kAlert;
    case 11: return RecordKind::kTelemetry;
    case 12: return RecordKind::kMetric;
    case 13: return RecordKind::kOutputRaw;
    case 17: return RecordKind::kRun;
    case 18: return RecordKind::kExit;
    case 20: return RecordKind::kFinal;
    case 21: return RecordKind::kHeader;
    case 22: return RecordKind::kFooter;
    case 23: return RecordKind::kPreempting;
    default: return RecordKind::kOther;
  }
}

}  // namespace

const char* RecordKindName(RecordKind k) {
  static const char* const kNames[] = {
      "none", "history", "summary", "output", "config", "files", "stats", "artifact",
      "tbrecord", "alert", "telemetry", "metric", "output_raw", "run", "exit", "final",
      "header", "footer", "preempting", "other"};
  return kNames[static_cast<int>(k)];
}

void Record::Clear() {
  // Keep the vectors' capacity: one record object serves a whole file.
  std::vector<Item> i = std::move(items);
  std::vector<std::string_view> p = std::move(parts);
  i.clear();
  p.clear();
  *this = Record{};
  items = std::move(i);
  parts = std::move(p);
}

Status DecodeRecord(std::string_view bytes, Record* out) {
  out->Clear();
  uint32_t bad_field = 0;
  const bool ok = ForFields(bytes, [&](Reader& r, uint32_t f, uint32_t wt) {
    if (f == 1) return Int(r, wt, &out->num);
    // Control (16), uuid (19), _info (200), request (100) and anything newer: not ours.
    const RecordKind kind = (f >= 2 && f <= 13) || (f >= 17 && f <= 23 && f != 19) ? KindOf(f)
                                                                                   : RecordKind::kNone;
    if (kind == RecordKind::kNone) return r.Skip(wt);
    std::string_view b;
    if (!Str(r, wt, &b)) {
      bad_field = f;
      return false;
    }
    out->kind = kind;
    bool good = true;
    switch (kind) {
      case RecordKind::kHistory: good = History(b, out); break;
      case RecordKind::kSummary:
      case RecordKind::kConfig: good = Updates(b, out); break;
      case RecordKind::kStats: good = Stats(b, out); break;
      case RecordKind::kRun: good = Run(b, out); break;
      case RecordKind::kExit: good = Exit(b, out); break;
      case RecordKind::kHeader: good = Header(b, out); break;
      case RecordKind::kTelemetry: good = Telemetry(b, out); break;
      case RecordKind::kMetric: good = Metric(b, out); break;
      case RecordKind::kAlert: good = Alert(b, out); break;
      case RecordKind::kOutput:
      case RecordKind::kOutputRaw: good = Output(b, out); break;
      case RecordKind::kTbRecord: good = TbRecord(b, out); break;
      default: break;
    }
    if (!good) bad_field = f;
    return good;
  });
  if (!ok)
    return Corrupt(std::string("malformed wandb_internal.Record") +
                   (bad_field ? std::string(" (") + RecordKindName(KindOf(bad_field)) + ", field " +
                                    std::to_string(bad_field) + ")"
                              : ""));
  return Status::Ok();
}

void ItemName(const Record& r, const Item& item, std::string* out) {
  out->clear();
  if (item.count == 0) {
    out->assign(item.key);
    return;
  }
  for (uint32_t i = 0; i < item.count; ++i) {
    if (i) out->push_back('.');
    out->append(r.parts[item.first + i]);
  }
}

}  // namespace tw::wandb

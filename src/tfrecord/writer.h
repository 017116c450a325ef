// TFRecord framing for writers: used by the test writer, the benchmarks and the example
// logdir generator. trainwatch itself never writes event files.
#pragma once

#include <string>
#include <string_view>

namespace tw::tfrecord {

// Appends one framed record to `out`.
void AppendRecord(std::string* out, std::string_view data);
inline std::string FrameRecord(std::string_view data) {
  std::string out;
  AppendRecord(&out, data);
  return out;
}

}  // namespace tw::tfrecord

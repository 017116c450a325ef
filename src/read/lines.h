// Lines of text, for every line-oriented source (W&B's JSON lines, console logs, CSV). A line
// is returned once its newline is written, so a half-written last line is "come back later",
// never an error. Blank lines are skipped; a trailing '\r' is dropped. A line longer than the
// limit is reported once and skipped to its newline, so one runaway line (a progress bar that
// never printed a newline) costs its bytes, not the rest of the file. Read through
// read::FileReader, with every guarantee listed there.
#pragma once

#include <cstdint>
#include <string_view>

#include "read/file_reader.h"
#include "read/problem.h"

namespace tw::read {

struct LineOptions {
  // Larger lines are skipped and reported (a W&B history row of a few KiB is normal;
  // histograms make some rows a few hundred KiB).
  uint64_t max_line = uint64_t{64} << 20;
};

class LineScanner : public ScannerDefaults {
 public:
  using Options = LineOptions;

  LineScanner(std::string_view window, uint64_t base, ScanState state, Options options = {})
      : w_(window), base_(base), state_(state), options_(options) {}

  ScanStep Next();

  std::string_view record() const { return line_; }
  uint64_t record_offset() const { return line_offset_; }
  const Problem& problem() const { return problem_; }
  uint64_t position() const { return base_ + pos_; }
  uint64_t needed() const { return needed_; }
  const ScanState& state() const { return state_; }  // resyncing: inside an over-long line
  Options options() const { return options_; }

 private:
  std::string_view w_;
  uint64_t base_;
  size_t pos_ = 0;  // the next line's first byte
  ScanState state_;
  Options options_;
  std::string_view line_;
  uint64_t line_offset_ = 0;
  uint64_t needed_ = 0;
  Problem problem_;
};

using LineReader = FileReader<LineScanner>;

}  // namespace tw::read

// Lines of the JSON-lines files older W&B SDKs (before 0.10, 2020) wrote instead of a `.wandb`
// log: wandb-history.jsonl (one object per wandb.log row) and wandb-events.jsonl (system
// metrics). Read incrementally like the other readers: a line is returned once its newline
// is written, so a half-written last line is "come back later", never an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/file_io.h"
#include "base/status.h"

namespace tw::wandb::jsonl {

// Larger lines are skipped and reported (a row of a few KiB is normal; histograms make some
// rows a few hundred KiB).
constexpr uint64_t kMaxLine = 64 << 20;

enum class ProblemKind { kLineTooLong };
const char* ProblemKindName(ProblemKind kind);

struct Problem {
  ProblemKind kind = ProblemKind::kLineTooLong;
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string detail;
};

// What survives between reads besides the offset: whether the reader is inside an over-long
// line, dropping bytes until its newline (resyncing), and where that line began.
struct ScanState {
  bool resyncing = false;
  uint64_t resync_from = 0;
};

class LineReader {
 public:
  // kYield: about a chunk of bytes was consumed (blank lines, an over-long line being skipped)
  // with nothing to return; position() and state() are a valid resume point. Call again.
  enum class Step { kRecord, kProblem, kYield, kEnd };

  LineReader(std::string path, uint64_t offset, ScanState state, size_t chunk = 1 << 20);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Reads `file` (already opened and checked by the caller) instead of opening the path
  // again: what was checked is what is read. Open() must still be called.
  void Adopt(InputFile file);
  Status Open();
  // kRecord: record() is one line without its newline (empty lines are skipped).
  Step Next();

  std::string_view record() const { return line_; }
  uint64_t record_offset() const { return line_offset_; }
  const Problem& problem() const { return problem_; }
  uint64_t position() const { return pos_; }
  const ScanState& state() const { return state_; }
  const Status& status() const { return status_; }

 private:
  bool Fill();

  std::string path_;
  int fd_ = -1;
  size_t chunk_;
  std::string buf_;       // file bytes from buf_base_
  uint64_t buf_base_;
  size_t scan_ = 0;       // where to look for the next newline in buf_
  uint64_t pos_;          // the next line's first byte
  // state_.resyncing: inside an over-long line, dropping bytes until its newline.
  std::string_view line_;
  uint64_t line_offset_ = 0;
  Problem problem_;
  ScanState state_;
  Status status_;
};

}  // namespace tw::wandb::jsonl

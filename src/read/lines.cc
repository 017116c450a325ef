#include "read/lines.h"

#include <string>

namespace tw::read {

ScanStep LineScanner::Next() {
  for (;;) {
    const size_t nl = w_.find('\n', pos_);
    if (nl == std::string_view::npos) {
      const size_t partial = w_.size() - pos_;
      if (state_.resyncing) {
        pos_ = w_.size();  // drop what there is of the over-long line
        needed_ = 1;
        return ScanStep::kNeedMore;
      }
      if (partial > options_.max_line) {
        problem_ = {ProblemKind::kLineTooLong, position(), 0,
                    "line at offset " + std::to_string(position()) + " is longer than " +
                        std::to_string(options_.max_line >> 20) + " MiB; skipped to its end"};
        state_ = {true, position()};
        pos_ = w_.size();
        return ScanStep::kProblem;
      }
      needed_ = partial + 1;
      return ScanStep::kNeedMore;
    }
    const bool skipped = state_.resyncing;
    state_.resyncing = false;
    line_offset_ = position();
    line_ = w_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    if (!line_.empty() && line_.back() == '\r') line_.remove_suffix(1);
    if (skipped || line_.empty()) continue;
    return ScanStep::kRecord;
  }
}

}  // namespace tw::read

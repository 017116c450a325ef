// What a line of a console log says, by profiles: files of named regexes that a user reads and
// extends like the SQL rules (profiles/*.toml are built in; a directory of the user's own is
// read first, and a profile with a built-in's name replaces it). docs/sources.md gives the
// format. A line that no profile reads is never an error: most of a console log is not metrics.
//
// A profile is a list of patterns. A pattern reads a segment (the text between carriage
// returns: a progress bar redrawn in place is many segments on one line) when `match` finds in
// it, and takes from it:
//   - `step`: the step, group 1; with three groups (epoch, i, n) the step is
//     (epoch - first_epoch) * n + i (mmdet's "Epoch [3][50/500]"; first_epoch 1 unless set),
//     plus `step_shift` when set;
//   - `progress`: a progress bar's count and total, groups 1 and 2 (its count is the step of
//     what follows, from the bar with the largest total: the training bar, not an eval bar);
//   - `pairs`: every match one metric, group 1 its key as written, group 2 its value;
//   - `step_keys`: keys among the pairs that are the step (the first present wins; it is not
//     kept as a metric); with `step_keys` a segment without one of them is not read;
//   - `redisplay = true`: the values stay on show until they change (a progress bar's
//     postfix): a value printed as it was last shown is not a new point.
// Terminal escapes (colours, bold) are taken out of a segment before it is read.
// In every regex, {number} stands for a number as Python, C and Keras print one (nan, inf,
// NaN, Infinity and exponents included).
//
// Loading and reading are pure functions of their inputs: any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tw::decode {

struct EmbeddedProfile {
  const char* name;
  const char* text;
};
const std::vector<EmbeddedProfile>& EmbeddedProfiles();  // generated from profiles/*.toml

// What one segment said.
struct ConsoleValues {
  std::string profile;  // which profile read it
  int pattern = 0;      // and which of its patterns (0-based)
  std::optional<int64_t> step;
  std::optional<std::pair<int64_t, int64_t>> progress;  // (count, total)
  std::vector<std::pair<std::string, double>> metrics;  // in the order written
  bool redisplay = false;  // the pattern's `redisplay`
};

class ProfileSet {
 public:
  // The built-in profiles, preceded by every *.toml file of `user_dir` (if not empty) in name
  // order. A file that does not load is reported in `errors` ("FILE: why") and skipped.
  static std::shared_ptr<const ProfileSet> Load(const std::string& user_dir,
                                                std::vector<std::string>* errors);
  // The built-in profiles alone, parsed and compiled once per process (they never change).
  static std::shared_ptr<const ProfileSet> BuiltIn();
  // One profile from its text; the error names `file`, and the line where toml++ can say.
  static Status Parse(std::string_view text, const std::string& file, ProfileSet* into);

  ProfileSet();
  ~ProfileSet();
  ProfileSet(ProfileSet&&) noexcept;
  ProfileSet& operator=(ProfileSet&&) noexcept;

  // The first pattern that reads `segment`, in profile order. False when none does.
  bool Read(std::string_view segment, ConsoleValues* out) const;
  std::vector<std::string> names() const;

 private:
  struct Pattern;
  struct Profile;
  std::vector<Profile> profiles_;
};

// `text` without its terminal escape sequences (ESC [ ... final byte, and ESC x).
std::string StripAnsi(std::string_view text);

// Splits a line into its segments at carriage returns and backspaces, with which progress
// bars redraw themselves (empty ones dropped).
std::vector<std::string_view> Segments(std::string_view line);

// A number as the profiles' {number} matches it; nullopt when it is not one.
std::optional<double> ParseConsoleNumber(std::string_view text);

}  // namespace tw::decode

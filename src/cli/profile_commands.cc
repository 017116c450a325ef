// trainwatch profiles: the console-log profiles, and what they read in a log.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "base/file_io.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "decode/console_profiles.h"

namespace tw::cli {
namespace {

constexpr const char* kProfilesHelp = R"(usage: trainwatch profiles [--profiles-dir DIR] [--test FILE|- [--all]]

Lists the console-log profiles in the order they are tried (yours from --profiles-dir first,
then the built-ins: hf_trainer, keras, lightning_bar, nanogpt, megatron, detectron2, mmdet,
generic). With --test, reads FILE (or standard input) as a console log and prints, for each
line a profile reads, its line number, the profile and pattern (name#n), the step it gives or
the progress bar's count, and the metrics; --all prints the lines nothing reads too. A line
that nothing reads is never an error. docs/sources.md describes the profile files.
)";

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

int CmdProfiles(const Args& args) {
  Flags f(args, {"profiles-dir", "test"}, {"help", "all"});
  if (f.Has("help")) return Usage(kProfilesHelp);
  if (!f.error().empty()) return Usage(kProfilesHelp, f.error());
  std::vector<std::string> errors;
  auto profiles = decode::ProfileSet::Load(f.Get("profiles-dir").value_or(""), &errors);
  for (const auto& e : errors) std::cerr << "trainwatch: profile skipped: " << e << "\n";
  const auto test = f.Get("test");
  if (!test) {
    for (const auto& n : profiles->names()) std::cout << n << "\n";
    return errors.empty() ? 0 : 1;
  }
  std::ifstream file;
  std::istream* in = &std::cin;
  if (*test != "-") {
    Result<InputFile> checked = InputFile::Open(*test);  // no FIFO, no directory
    if (!checked.ok()) {
      std::cerr << "trainwatch: " << checked.status().message() << "\n";
      return 1;
    }
    file.open(*test, std::ios::binary);
    in = &file;
  }
  std::string line;
  int64_t number = 0, read = 0;
  std::map<std::string, int64_t> by_profile;
  decode::ConsoleValues v;
  while (std::getline(*in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string shown;
    for (std::string_view seg : decode::Segments(line)) {
      if (!profiles->Read(seg, &v)) continue;
      shown += "  " + v.profile + "#" + std::to_string(v.pattern + 1);
      if (v.step) shown += " step=" + std::to_string(*v.step);
      if (v.progress)
        shown += " bar=" + std::to_string(v.progress->first) + "/" + std::to_string(v.progress->second);
      for (const auto& [key, value] : v.metrics) shown += " " + key + "=" + Num(value);
      ++by_profile[v.profile];
    }
    if (!shown.empty()) ++read;
    if (!shown.empty() || f.Has("all"))
      std::cout << number << ":" << (shown.empty() ? "  -" : shown) << "\n";
  }
  std::cout << "lines: " << number << ", read: " << read;
  for (const auto& [name, n] : by_profile) std::cout << ", " << name << ": " << n << " segments";
  std::cout << "\n";
  return 0;
}

}  // namespace tw::cli

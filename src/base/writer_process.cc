#include "base/writer_process.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace tw {

std::optional<WriterId> ParseWriterId(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const std::string_view marker = "tfevents.";
  const size_t m = name.find(marker);
  if (m == std::string_view::npos) return std::nullopt;
  std::vector<std::string> parts;
  for (size_t p = m + marker.size(), q; p <= name.size(); p = q + 1) {
    q = name.find('.', p);
    if (q == std::string_view::npos) q = name.size();
    parts.emplace_back(name.substr(p, q - p));
  }
  if (!parts.empty() && parts.back() == "v2") parts.pop_back();
  if (parts.size() < 4) return std::nullopt;  // secs, host (may hold dots), pid, counter
  WriterId w;
  char* end = nullptr;
  w.created = std::strtod(parts[0].c_str(), &end);
  if (parts[0].empty() || *end) return std::nullopt;
  const long long pid = std::strtoll(parts[parts.size() - 2].c_str(), &end, 10);
  if (parts[parts.size() - 2].empty() || *end || pid <= 0) return std::nullopt;
  w.pid = pid;
  for (size_t i = 1; i + 2 < parts.size(); ++i) w.host += (w.host.empty() ? "" : ".") + parts[i];
  if (w.host.empty()) return std::nullopt;
  return w;
}

const char* WriterStateName(WriterState s) {
  switch (s) {
    case WriterState::kAlive: return "alive";
    case WriterState::kGone: return "gone";
    default: return "unknown";
  }
}

namespace {

// When process `pid` started (unix seconds), or nothing where /proc does not say.
std::optional<double> ProcessStart(int64_t pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  // Fields after the name start at 3 (state); starttime is field 22: the 20th of these.
  for (int i = 3; i <= 22 && rest >> field; ++i)
    if (i == 22) {
      // The boot time does not change while we run: /proc/stat is read once, not per probe.
      static const double btime = [] {
        std::ifstream proc_stat("/proc/stat");
        std::string key;
        double t = -1;
        while (proc_stat >> key)
          if (key == "btime" && proc_stat >> t) break;
        return t;
      }();
      const long hz = ::sysconf(_SC_CLK_TCK);
      if (btime < 0 || hz <= 0) return std::nullopt;
      return btime + std::strtod(field.c_str(), nullptr) / static_cast<double>(hz);
    }
  return std::nullopt;
}

std::string FirstLabel(const std::string& host) { return host.substr(0, host.find('.')); }

}  // namespace

WriterState ProbeThisHost(const WriterId& w) {
  char here[256] = {0};
  if (::gethostname(here, sizeof here - 1) != 0) return WriterState::kUnknown;
  if (w.host != here && FirstLabel(w.host) != FirstLabel(here)) return WriterState::kUnknown;
  if (::kill(static_cast<pid_t>(w.pid), 0) != 0 && errno != EPERM) return WriterState::kGone;
  // The writer opened the file after it started; a process that started later is another one
  // under a reused pid. (btime and the name's seconds are both whole seconds: a little slack.)
  constexpr double kSlackSeconds = 3;
  if (const std::optional<double> start = ProcessStart(w.pid); start && *start > w.created + kSlackSeconds)
    return WriterState::kGone;
  return WriterState::kAlive;
}

}  // namespace tw

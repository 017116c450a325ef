#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <string>

namespace tw::log {
namespace {
std::atomic<bool> g_verbose{false};
}

void SetVerbose(bool verbose) { g_verbose = verbose; }
bool Verbose() { return g_verbose; }

void Write(Level level, std::string_view message) {
  if (level == Level::kDebug && !g_verbose) return;
  std::string line = "<" + std::to_string(static_cast<int>(level)) + ">";
  line.append(message);
  line += '\n';
  // One write per line keeps lines from different threads whole.
  ssize_t rc = ::write(STDERR_FILENO, line.data(), line.size());
  (void)rc;
}

}  // namespace tw::log

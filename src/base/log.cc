#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "base/utf8.h"

namespace tw::log {
namespace {
std::atomic<bool> g_verbose{false};

void AppendByte(unsigned char c, std::string* out) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  *out += buf;
}
}  // namespace

void SetVerbose(bool verbose) { g_verbose = verbose; }
bool Verbose() { return g_verbose; }

std::string Escape(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  char32_t cp;
  size_t bad;
  for (size_t i = 0; i < message.size();) {
    const size_t n = utf8::Decode(message, i, &cp, &bad);
    if (n == 0) {  // each invalid byte shown as it is, so the real name can still be found
      for (size_t k = 0; k < bad; ++k) AppendByte(static_cast<unsigned char>(message[i + k]), &out);
      i += bad;
      continue;
    }
    if (cp == '\\') out += "\\\\";
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp < 0x20 || cp == 0x7F) AppendByte(static_cast<unsigned char>(cp), &out);
    // C1 controls (NEL among them) and the Unicode line and paragraph separators.
    else if ((cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(message.substr(i, n));
    }
    i += n;
  }
  return out;
}

void Write(Level level, std::string_view message) {
  if (level == Level::kDebug && !g_verbose) return;
  std::string line = "<" + std::to_string(static_cast<int>(level)) + ">";
  // Messages carry file and run names, which may hold any byte: escaped, one event stays one
  // line, and its priority prefix the only one (a name holding "\n<3>..." forges nothing).
  line += Escape(message);
  line += '\n';
  // One write per line keeps lines from different threads whole.
  ssize_t rc = ::write(STDERR_FILENO, line.data(), line.size());
  (void)rc;
}

}  // namespace tw::log

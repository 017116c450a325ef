// Logging to stderr, one line per event worth knowing, with the "<N>" priority prefixes that
// journald understands (sd-daemon(3)): <3> error, <4> warning, <5> notice, <6> info, <7> debug.
// Thread-safe: each line is written with a single write(2).
#pragma once

#include <string>
#include <string_view>

namespace tw::log {

enum class Level { kError = 3, kWarning = 4, kNotice = 5, kInfo = 6, kDebug = 7 };

void SetVerbose(bool verbose);  // debug lines are dropped unless verbose
bool Verbose();
// Writes "<N>" and the escaped message as one line.
void Write(Level level, std::string_view message);
// What Write does to a message: backslash, control characters, C1 controls, U+2028/U+2029
// and invalid UTF-8 bytes escaped (\\, \n, \r, \t, \xHH, \uHHHH), so the line is one line of
// valid UTF-8 whatever names it quotes.
std::string Escape(std::string_view message);

inline void Error(std::string_view m) { Write(Level::kError, m); }
inline void Warning(std::string_view m) { Write(Level::kWarning, m); }
inline void Notice(std::string_view m) { Write(Level::kNotice, m); }
inline void Info(std::string_view m) { Write(Level::kInfo, m); }
inline void Debug(std::string_view m) { Write(Level::kDebug, m); }

}  // namespace tw::log

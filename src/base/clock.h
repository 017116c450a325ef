// Wall-clock time as unix seconds with a fraction: what the store's time columns hold.
#pragma once

#include <chrono>

namespace tw {

inline double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace tw

// Wall time measured on the monotonic clock, the one every duration in kernelarc is taken on.
#pragma once

#include <chrono>

namespace kernelarc {

/// Seconds from `start` to now.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kernelarc

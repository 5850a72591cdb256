// Which process owns a record (a run of the store), told apart from a later process that reuses
// its pid: the host, the pid and the process's start time since boot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kernelarc {

struct ProcessIdentity {
  std::string host;
  int64_t pid = 0;
  int64_t start_ticks = 0;  ///< /proc/PID/stat's starttime (clock ticks after boot)
  bool operator==(const ProcessIdentity&) const = default;
};

/// This process.
ProcessIdentity this_process();

/// Whether the process still runs: nullopt when it ran on another host, where this one cannot
/// look.
std::optional<bool> process_alive(const ProcessIdentity& process);

}  // namespace kernelarc

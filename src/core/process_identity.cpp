#include "core/process_identity.h"

#include <unistd.h>

#include <climits>
#include <fstream>
#include <sstream>

namespace kernelarc {
namespace {

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name) != 0) return "";
  return name;
}

/// The starttime field (the 22nd) of /proc/PID/stat; nullopt when the process is gone.
std::optional<int64_t> start_ticks_of(int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return std::nullopt;
  // The command name (field 2) is in parentheses and may hold spaces or parentheses itself.
  const auto name_end = text.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(name_end + 1));
  std::string field;
  for (int index = 3; index < 22; ++index) fields >> field;
  int64_t ticks = 0;
  if (!(fields >> ticks)) return std::nullopt;
  return ticks;
}

}  // namespace

ProcessIdentity this_process() {
  const int64_t pid = getpid();
  return {host_name(), pid, start_ticks_of(pid).value_or(0)};
}

std::optional<bool> process_alive(const ProcessIdentity& process) {
  if (process.host != host_name()) return std::nullopt;
  const auto ticks = start_ticks_of(process.pid);
  return ticks && *ticks == process.start_ticks;
}

}  // namespace kernelarc

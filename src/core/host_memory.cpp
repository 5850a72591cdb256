#include "core/host_memory.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace kernelarc {

std::optional<int64_t> physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return std::nullopt;
  return static_cast<int64_t>(pages) * page_size;
}

std::optional<int64_t> available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return physical_memory_bytes();
}

}  // namespace kernelarc

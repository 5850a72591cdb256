#include "app/memory_check.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "eval/speed_of_light.h"

namespace kernelarc {

std::optional<int64_t> available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return std::nullopt;
  return static_cast<int64_t>(pages) * page_size;
}

std::optional<std::string> memory_warning(const Definition& definition,
                                          const std::vector<Workload>& workloads,
                                          std::optional<int64_t> available_bytes) {
  if (!available_bytes || *available_bytes <= 0) return std::nullopt;
  const Workload* largest = nullptr;
  double largest_bytes = 0;
  for (const Workload& workload : workloads) {
    const double bytes = problem_bytes(definition, resolve_axes(definition, workload));
    if (largest == nullptr || bytes > largest_bytes) largest = &workload, largest_bytes = bytes;
  }
  if (largest == nullptr || largest_bytes <= static_cast<double>(*available_bytes) / 3)
    return std::nullopt;
  return fmt::format(
      "warning: workload {} holds {:.3g} GB of inputs and outputs, and this machine has {:.3g} GB "
      "available: the PyTorch reference's intermediates and the guard's copies need about three "
      "times that, and a draw whose process is killed for memory fails only after it has run "
      "(shrink the workload's axes, or run where there is more memory)",
      largest->uuid, largest_bytes * 1e-9, static_cast<double>(*available_bytes) * 1e-9);
}

}  // namespace kernelarc

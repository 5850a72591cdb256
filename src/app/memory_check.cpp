#include "app/memory_check.h"

#include <fmt/format.h>

namespace kernelarc {

std::optional<std::string> memory_warning(const Definition& definition,
                                          const std::vector<Workload>& workloads,
                                          std::optional<int64_t> available_bytes) {
  if (!available_bytes || *available_bytes <= 0) return std::nullopt;
  const Workload* largest = nullptr;
  double largest_bytes = 0;
  for (const Workload& workload : workloads) {
    const double bytes = tensor_bytes(definition, resolve_axes(definition, workload));
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

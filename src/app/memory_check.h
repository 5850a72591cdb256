// Whether a problem's workloads fit this machine's memory, told before the search starts: a
// PyTorch reference that the kernel kills for memory fails its correctness draw only after
// minutes of silence, and every draw of every candidate meets the same fate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"

namespace kernelarc {

/// A warning naming the largest workload when its inputs and outputs take more than a third of
/// `available_bytes` (the reference holds them with its intermediates, the guard the expected
/// outputs and the candidate's copies besides: a KernelBench MSELoss of 8.6 GB was killed at 16
/// GB resident in its reference alone), with both sizes; nullopt when it fits or the available
/// memory is unknown.
std::optional<std::string> memory_warning(const Definition& definition,
                                          const std::vector<Workload>& workloads,
                                          std::optional<int64_t> available_bytes);

}  // namespace kernelarc

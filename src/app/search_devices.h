// The devices a search measures its candidates on at once, from --device and --cpu-workers:
// "cuda:0,1" or "cuda:all" is one evaluator per GPU; "cpu" with N CPU workers is N evaluators,
// each on a disjoint share of this process's cores. The first is the run's device: it measures
// the baseline, and the finalists are re-measured on it (on the CPU, on every core).
#pragma once

#include <string>
#include <vector>

namespace kernelarc {

struct SearchDevice {
  std::string device;     ///< "cpu" or "cuda:N"
  std::vector<int> cpus;  ///< the cores its worker runs on; empty = all
  std::string where;      ///< in words, for the progress lines: "cuda:1", "cpu 2-3"
};

/// InputError naming the flag and what it expects for a malformed list, a device named twice,
/// "cuda:all" without a GPU, more CPU workers than cores, or CPU workers with a GPU.
std::vector<SearchDevice> search_devices(const std::string& device_flag, int cpu_workers);

}  // namespace kernelarc

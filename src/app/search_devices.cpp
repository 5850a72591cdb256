#include "app/search_devices.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "backend/device_list.h"
#include "core/error.h"

namespace kernelarc {
namespace {

constexpr const char* kExpected = "expected cpu, cuda:N, a list cuda:N,M,... or cuda:all";

std::vector<SearchDevice> cuda_devices(const std::string& flag) {
  const std::string list = flag == "cuda" ? "0" : flag.substr(5);
  std::vector<std::string> names;
  if (list == "all") {
    names = usable_devices(DeviceKind::Cuda);
    if (names.empty()) throw InputError("--device cuda:all: this host has no usable CUDA device");
  } else {
    for (std::size_t begin = 0; begin <= list.size();) {
      const std::size_t end = std::min(list.find(',', begin), list.size());
      int ordinal = -1;
      const auto [rest, error] = std::from_chars(list.data() + begin, list.data() + end, ordinal);
      if (error != std::errc() || rest != list.data() + end || ordinal < 0)
        throw InputError(fmt::format("--device {}: {}", flag, kExpected));
      names.push_back(fmt::format("cuda:{}", ordinal));
      begin = end + 1;
    }
  }
  std::vector<SearchDevice> devices;
  for (const std::string& name : names) {
    if (std::any_of(devices.begin(), devices.end(),
                    [&](const SearchDevice& device) { return device.device == name; }))
      throw InputError(fmt::format("--device {}: {} is named twice", flag, name));
    devices.push_back({name, {}, name});
  }
  return devices;
}

/// "2-3", or "0,2" when the share is not contiguous.
std::string cores_text(const std::vector<int>& cpus) {
  if (cpus.back() - cpus.front() + 1 == static_cast<int>(cpus.size()))
    return cpus.size() == 1 ? std::to_string(cpus.front())
                            : fmt::format("{}-{}", cpus.front(), cpus.back());
  return fmt::format("{}", fmt::join(cpus, ","));
}

std::vector<SearchDevice> cpu_workers_of(int workers) {
  if (workers == 1) return {{"cpu", {}, "cpu"}};
  const std::vector<int> cores = usable_cpus();
  if (workers > static_cast<int>(cores.size()))
    throw InputError(
        fmt::format("--cpu-workers {}: expected at most {}, the cores this process may run on",
                    workers, cores.size()));
  // Equal shares, so that times measured on any of them compare; the cores left over when the
  // count does not divide stay free for the orchestrator and the compilers.
  const std::size_t share_size = cores.size() / static_cast<std::size_t>(workers);
  std::vector<SearchDevice> devices;
  for (std::size_t worker = 0; worker < static_cast<std::size_t>(workers); ++worker) {
    const auto begin = cores.begin() + static_cast<std::ptrdiff_t>(worker * share_size);
    std::vector<int> share(begin, begin + static_cast<std::ptrdiff_t>(share_size));
    const std::string where = "cpu " + cores_text(share);
    devices.push_back({"cpu", std::move(share), where});
  }
  return devices;
}

}  // namespace

std::vector<SearchDevice> search_devices(const std::string& device_flag, int cpu_workers) {
  if (cpu_workers < 1)
    throw InputError(fmt::format("--cpu-workers {}: expected at least 1", cpu_workers));
  if (device_flag == "cpu") return cpu_workers_of(cpu_workers);
  if (device_flag != "cuda" && device_flag.rfind("cuda:", 0) != 0)
    throw InputError(fmt::format("--device {}: {}", device_flag, kExpected));
  if (cpu_workers > 1)
    throw InputError(fmt::format("--cpu-workers {}: CPU workers measure on the CPU, not on {}",
                                 cpu_workers, device_flag));
  return cuda_devices(device_flag);
}

}  // namespace kernelarc

#include "backend/device_list.h"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "backend/cuda/cuda_device.h"

namespace kernelarc {

std::vector<std::string> usable_devices(DeviceKind kind) {
  if (kind == DeviceKind::Cpu) return {"cpu"};
  std::vector<std::string> devices;
  for (int ordinal = 0; ordinal < cuda_device_count(); ++ordinal)
    devices.push_back("cuda:" + std::to_string(ordinal));
  return devices;
}

std::vector<int> usable_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  if (cpus.empty())
    for (int cpu = 0; cpu < static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
         ++cpu)
      cpus.push_back(cpu);
  return cpus;
}

}  // namespace kernelarc

// --device and --cpu-workers into the devices a search measures on: GPU lists, CPU workers on
// equal disjoint shares of this process's cores, and one-line errors naming the flag.
#include "app/search_devices.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "backend/device_list.h"
#include "core/error.h"

namespace kernelarc {
namespace {

std::string error_of(const std::string& device, int cpu_workers) {
  try {
    search_devices(device, cpu_workers);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

TEST(SearchDevices, AGpuListIsOneDevicePerGpuInItsOrder) {
  const auto devices = search_devices("cuda:2,0", 1);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].device, "cuda:2");
  EXPECT_EQ(devices[1].device, "cuda:0");
  EXPECT_EQ(devices[1].where, "cuda:0");
  EXPECT_TRUE(devices[0].cpus.empty());
  EXPECT_EQ(search_devices("cuda", 1).front().device, "cuda:0");
}

TEST(SearchDevices, OneCpuWorkerRunsOnEveryCore) {
  const auto devices = search_devices("cpu", 1);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].device, "cpu");
  EXPECT_TRUE(devices[0].cpus.empty());
}

TEST(SearchDevices, CpuWorkersGetEqualDisjointShares) {
  const std::vector<int> cores = usable_cpus();
  for (int workers = 2; workers <= static_cast<int>(cores.size()); ++workers) {
    const auto devices = search_devices("cpu", workers);
    ASSERT_EQ(devices.size(), static_cast<std::size_t>(workers));
    std::set<int> taken;
    for (const SearchDevice& device : devices) {
      EXPECT_EQ(device.device, "cpu");
      EXPECT_EQ(device.cpus.size(), cores.size() / workers) << device.where;
      for (int cpu : device.cpus) {
        EXPECT_TRUE(taken.insert(cpu).second) << "core " << cpu << " shared";
        EXPECT_NE(std::find(cores.begin(), cores.end(), cpu), cores.end()) << cpu;
      }
    }
    EXPECT_EQ(devices[0].where.rfind("cpu ", 0), 0u) << devices[0].where;
  }
}

TEST(SearchDevices, BadFlagsNameTheFlagAndWhatIsExpected) {
  const int cores = static_cast<int>(usable_cpus().size());
  EXPECT_EQ(error_of("cuda:0,x", 1),
            "--device cuda:0,x: expected cpu, cuda:N, a list cuda:N,M,... or cuda:all");
  EXPECT_EQ(error_of("cuda:", 1),
            "--device cuda:: expected cpu, cuda:N, a list cuda:N,M,... or cuda:all");
  EXPECT_EQ(error_of("cuda:0,,1", 1),
            "--device cuda:0,,1: expected cpu, cuda:N, a list cuda:N,M,... or cuda:all");
  EXPECT_EQ(error_of("cuda:-1", 1),
            "--device cuda:-1: expected cpu, cuda:N, a list cuda:N,M,... or cuda:all");
  EXPECT_EQ(error_of("gpu", 1),
            "--device gpu: expected cpu, cuda:N, a list cuda:N,M,... or cuda:all");
  EXPECT_EQ(error_of("cuda:1,0,1", 1), "--device cuda:1,0,1: cuda:1 is named twice");
  EXPECT_EQ(error_of("cpu", 0), "--cpu-workers 0: expected at least 1");
  EXPECT_EQ(error_of("cpu", cores + 1), "--cpu-workers " + std::to_string(cores + 1) +
                                            ": expected at most " + std::to_string(cores) +
                                            ", the cores this process may run on");
  EXPECT_EQ(error_of("cuda:0", 2),
            "--cpu-workers 2: CPU workers measure on the CPU, not on cuda:0");
}

TEST(SearchDevices, AllGpusAreThoseOfThisHost) {
  const std::vector<std::string> gpus = usable_devices(DeviceKind::Cuda);
  if (gpus.empty()) {
    EXPECT_EQ(error_of("cuda:all", 1), "--device cuda:all: this host has no usable CUDA device");
    return;
  }
  std::vector<std::string> named;
  for (const SearchDevice& device : search_devices("cuda:all", 1)) named.push_back(device.device);
  EXPECT_EQ(named, gpus);
}

}  // namespace
}  // namespace kernelarc

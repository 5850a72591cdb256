// NVML through dlopen: a reading, or "unavailable" with the reason where there is no driver.
#include <gtest/gtest.h>

#include <memory>

#include "backend/cuda/cuda_nvml.h"
#include "backend/cuda_test_support.h"

namespace kernelarc {
namespace {

TEST(CudaNvml, ReadsOrExplainsWhyNot) {
  const GpuStatus status = read_gpu_status(0);
  if (status.available) {
    EXPECT_FALSE(status.name.empty());
    EXPECT_EQ(status.to_json()["available"], true);
  } else {
    EXPECT_FALSE(status.unavailable_reason.empty());
    EXPECT_EQ(status.to_json()["reason"], status.unavailable_reason);
  }
  const GpuStatus missing = read_gpu_status_by_pci("not-a-bus-id");
  EXPECT_FALSE(missing.available);
  EXPECT_FALSE(missing.unavailable_reason.empty());
}

TEST(GpuCudaNvml, ReadsClocksOfTheCudaDevice) {
  KERNELARC_REQUIRE_GPU();
  const std::unique_ptr<Device> device = make_cuda_device(0);
  const CudaDeviceInfo* info = cuda_device_info(*device);
  ASSERT_NE(info, nullptr);
  const GpuStatus status = info->gpu_status();
  ASSERT_TRUE(status.available) << status.unavailable_reason;
  EXPECT_FALSE(status.name.empty());
  EXPECT_FALSE(status.driver_version.empty());
  EXPECT_GT(status.sm_clock_mhz, 0u);
  EXPECT_GT(status.memory_clock_mhz, 0u);
  EXPECT_TRUE(status.unread.empty()) << status.to_json().dump();
  std::printf("NVML: %s\n", status.to_json().dump().c_str());
}

}  // namespace
}  // namespace kernelarc

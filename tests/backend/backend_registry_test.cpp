// backend_for: one Backend per --device name, the only place that reads device names.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "core/error.h"

namespace kernelarc {
namespace {

TEST(BackendRegistry, NamesTheDevicesItServes) {
  EXPECT_EQ(backend_for("cpu").kind(), DeviceKind::Cpu);
  EXPECT_EQ(backend_for("cpu").device(), "cpu");
  EXPECT_EQ(backend_for("cuda").kind(), DeviceKind::Cuda);
  EXPECT_EQ(backend_for("cuda").device(), "cuda:0");
  EXPECT_EQ(backend_for("cuda:3").device(), "cuda:3");
  EXPECT_EQ(backend_for("cuda:3").kind_name(), "cuda");
  EXPECT_EQ(&backend_for("cpu"), &backend_for("cpu"));  // chosen once, kept
}

TEST(BackendRegistry, RejectsOtherNamesNamingTheFlag) {
  for (const char* name : {"tpu", "cuda:", "cuda:x", "CPU", ""}) {
    try {
      backend_for(name);
      ADD_FAILURE() << name;
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find("--device"), std::string::npos) << error.what();
    }
  }
}

TEST(BackendRegistry, KnowsWhatEachDeviceBuildsAndTimes) {
  const Backend& cpu = backend_for("cpu");
  const Backend& cuda = backend_for("cuda:0");
  EXPECT_TRUE(cpu.builds_language("cpp"));
  EXPECT_FALSE(cpu.builds_language("cuda_cpp"));
  EXPECT_TRUE(cuda.builds_language("cuda_cpp"));
  EXPECT_FALSE(cuda.builds_language("cpp"));
  EXPECT_FALSE(cpu.times_compiled_baseline());
  EXPECT_TRUE(cuda.times_compiled_baseline());
  EXPECT_FALSE(cpu.builds_ahead());
  EXPECT_TRUE(cuda.builds_ahead());
}

TEST(BackendRegistry, ComputePeakFollowsTheDevice) {
  Calibration calibration;
  calibration.fp32_fma_tflops = 2;
  calibration.tensor_tflops["bfloat16"] = 900;
  // The CPU's FMA rate bounds T_SOL whatever the problem.
  const auto cpu = backend_for("cpu").compute_peak(calibration, "bfloat16");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->what, "fp32 FMA");
  EXPECT_TRUE(cpu->bounds_sol);
  // A GPU's matrix product runs on tensor cores; other arithmetic is reported, not bounding.
  const auto tensor = backend_for("cuda:0").compute_peak(calibration, "bfloat16");
  ASSERT_TRUE(tensor);
  EXPECT_EQ(tensor->what, "bfloat16 tensor cores");
  EXPECT_DOUBLE_EQ(tensor->flops_per_second, 900e12);
  const auto plain = backend_for("cuda:0").compute_peak(calibration, std::nullopt);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->what, "fp32 FMA");
  EXPECT_FALSE(plain->bounds_sol);
  calibration.fp32_fma_tflops = 0;
  EXPECT_FALSE(backend_for("cpu").compute_peak(calibration, std::nullopt));
}

}  // namespace
}  // namespace kernelarc

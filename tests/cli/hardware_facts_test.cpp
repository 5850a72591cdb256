// The hardware section of a synthesizer's prompt on the CPU (issue 25, item 7), as
// `kernelarc prompt` prints it: cores, the vector ISA, the caches with L1, the compiler and its
// flags, and a last-level cache a VM reports beyond what any CPU has capped by sysfs or called
// out instead of trusted; the knowledge shown holds no GPU note.
#include <gtest/gtest.h>
#include <unistd.h>

#include "backend/calibrate.h"
#include "cli/cli_test_support.h"
#include "core/test_support.h"

namespace kernelarc {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(HardwareFacts, CpuPromptNamesIsaCachesAndCompilerAndNoGpuNotes) {
  testing::TempDir workspace;
  Calibration calibration;
  calibration.device = "cpu";
  calibration.description = "Test CPU";
  calibration.measured_at = "2026-01-01T00:00:00Z";
  calibration.cores = 8;
  calibration.copy_bandwidth_gbs = 40;
  calibration.fp32_fma_tflops = 1.5;
  calibration.l2_bytes = 2 << 20;
  calibration.llc_bytes = int64_t{508} << 20;  // as a VM reported it
  calibration.environment["fma_isa"] = "avx2";
  save_calibration(workspace.path(), calibration);
  const auto result = run("prompt " + std::string(KERNELARC_SOURCE_DIR) +
                          "/problems/cpu/rmsnorm_f32 --workspace " + workspace.path().string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string& prompt = result.output;
  EXPECT_TRUE(contains(prompt, "8 cores")) << prompt;
  EXPECT_TRUE(contains(prompt, "; ISA ")) << prompt;
  EXPECT_TRUE(contains(prompt, "measured with avx2")) << prompt;
  EXPECT_TRUE(contains(prompt, "L2 2048 KiB per core")) << prompt;
  // Where sysfs names this machine's last-level cache, that size caps the reported one and is
  // shown; where it names none, the reported size is called out. Either way 508 MiB is not trusted.
  EXPECT_TRUE(contains(prompt, "; last-level cache ")) << prompt;
  EXPECT_FALSE(contains(prompt, "last-level cache 508 MiB shared")) << prompt;
  EXPECT_TRUE(contains(prompt, "Compiler: ")) << prompt;
  EXPECT_TRUE(contains(prompt, "-O3 -march=native -fopenmp")) << prompt;
  if (sysconf(_SC_LEVEL1_DCACHE_SIZE) > 0) EXPECT_TRUE(contains(prompt, "L1d ")) << prompt;
  const std::size_t knowledge = prompt.find("## Knowledge");
  ASSERT_NE(knowledge, std::string::npos) << prompt;
  const std::string notes =
      prompt.substr(knowledge, prompt.find("\n## ", knowledge + 1) - knowledge);
  EXPECT_FALSE(contains(notes, "GPU")) << notes;
  EXPECT_FALSE(contains(notes, "warp")) << notes;
}

}  // namespace
}  // namespace kernelarc

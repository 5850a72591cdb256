// Nsight Compute's source page read into the instructions where a kernel's warps stall. The
// sample (tests/diagnosis/data/ncu_source_sample.csv) is written by hand in the layout of
// `ncu --csv --page source --print-source sass`: a header naming "Source" and the warp-stall
// sample columns, one row per SASS instruction, numbers with thousands separators, two kernels.
// GpuNcuProfile reads the real page on a GPU; a recorded one should replace the sample.
#include <gtest/gtest.h>

#include "core/json_fields.h"
#include "diagnosis/ncu_source.h"
#include "source_dir.h"

namespace kernelarc {
namespace {

const std::filesystem::path kSourcePage = kSource / "tests/diagnosis/data/ncu_source_sample.csv";

TEST(NcuSource, KeepsTheKernelWithTheMostSamplesAndRanksItsInstructions) {
  const NcuSourceResult result = parse_ncu_source(read_text_file(kSourcePage), 0, 2);
  ASSERT_TRUE(result.profile.has_value()) << result.unavailable;
  const NcuSourceProfile& profile = *result.profile;
  EXPECT_NE(profile.kernel.find("scaled_gemm_wgmma_kernel"), std::string::npos);
  EXPECT_EQ(profile.instructions, 4u);
  EXPECT_DOUBLE_EQ(profile.samples, 8000);
  ASSERT_EQ(profile.top.size(), 2u);
  EXPECT_EQ(profile.top[0].index, 1u);
  EXPECT_NE(profile.top[0].instruction.find("SYNCS.PHASECHK"), std::string::npos);
  EXPECT_DOUBLE_EQ(profile.top[0].share, 6101.0 / 8000);
  EXPECT_NE(profile.top[1].instruction.find("HGMMA"), std::string::npos);
  // A predicated branch counts under its opcode, not its predicate.
  ASSERT_EQ(profile.opcodes.size(), 4u);
  EXPECT_EQ(profile.opcodes[0].first, "SYNCS");
  EXPECT_EQ(profile.opcodes[2].first, "BRA");
  EXPECT_DOUBLE_EQ(profile.opcodes[2].second, 697.0 / 8000);
  const std::string text = hotspots_text(profile);
  EXPECT_NE(text.find("76.3% #1"), std::string::npos) << text;
  EXPECT_NE(text.find("SYNCS 76.3%"), std::string::npos) << text;
}

TEST(NcuSource, OutputWithoutASampleTableSaysSoAndQuotesItsStart) {
  const NcuSourceResult result =
      parse_ncu_source("==ERROR== The application returned an error code (127).\n", 127);
  EXPECT_FALSE(result.profile.has_value());
  EXPECT_NE(result.unavailable.find("exit code 127"), std::string::npos) << result.unavailable;
  EXPECT_NE(result.unavailable.find("error code (127)"), std::string::npos) << result.unavailable;
}

TEST(NcuSource, TheCommandAsksForTheSassSourcePageOverEveryProcess) {
  const auto argv = ncu_source_command("/usr/local/cuda/bin/ncu", "/opt/kernelarc",
                                       {"profile-run", "--device", "cuda:0"});
  const std::string joined = [&] {
    std::string s;
    for (const auto& a : argv) s += a + " ";
    return s;
  }();
  EXPECT_NE(joined.find("--page source --print-source sass"), std::string::npos) << joined;
  EXPECT_NE(joined.find("--target-processes all /opt/kernelarc profile-run --device cuda:0"),
            std::string::npos)
      << joined;
}

}  // namespace
}  // namespace kernelarc

// `kernelarc export`: flags, the files it writes, and the exported CPU solution built by PyTorch's
// extension loader as SOL-ExecBench builds it, called on random inputs against the reference.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_test_support.h"
#include "core/test_support.h"

namespace {

namespace fs = std::filesystem;

const std::string kExportProblem = std::string(KERNELARC_SOURCE_DIR) + "/problems/cpu/rmsnorm_f32";
const std::string kExportSolution = kExportProblem + "/solutions/optimized";

CommandResult export_rmsnorm(const fs::path& out, const std::string& extra = "") {
  return run("export " + kExportSolution + " --format sol-execbench --problem " + kExportProblem +
             " --out " + out.string() + " " + extra);
}

TEST(ExportCli, BadFormatIsAClearError) {
  kernelarc::testing::TempDir dir;
  const CommandResult result = run("export " + kExportSolution + " --format tvm --problem " +
                                   kExportProblem + " --out " + (dir / "out").string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("--format: expected sol-execbench or flashinfer, got \"tvm\""),
            std::string::npos)
      << result.output;
}

TEST(ExportCli, SolutionFileNeedsAProblem) {
  const CommandResult result = run("export " + kExportSolution + " --format sol-execbench");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("--problem: required"), std::string::npos) << result.output;
}

TEST(ExportCli, LatestOfAnEmptyWorkspaceIsAClearError) {
  kernelarc::testing::TempDir dir;
  const CommandResult result =
      run("export latest --format sol-execbench --workspace " + (dir / "ws").string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("has no run"), std::string::npos) << result.output;
}

TEST(ExportCli, WritesTheSolutionBesideACopyOfTheProblem) {
  kernelarc::testing::TempDir dir;
  const CommandResult result = export_rmsnorm(dir / "out");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("sol-execbench " + (dir / "out").string()), std::string::npos);
  for (const char* name : {"solution.json", "definition.json", "workload.jsonl"})
    EXPECT_TRUE(fs::exists(dir / "out" / name)) << name;
  const auto json = nlohmann::json::parse(std::ifstream(dir / "out" / "solution.json"));
  EXPECT_EQ(json["spec"]["entry_point"], "main.cpp::run");
  EXPECT_EQ(json["spec"]["binding"], "torch");
  EXPECT_FALSE(json.contains("kernelarc"));
}

// One PyTorch extension build per calling style (about 25 s each on two cores).
// One torch build (about 25 s of CI): the destination-passing export, kernelarc's default. The
// value-returning entry point's text is checked in tests/app/solution_export_test.cpp.
TEST(ExportCli, ExportedCpuSolutionBuiltByTorchMatchesTheReference) {
  kernelarc::testing::TempDir dir;
  ASSERT_EQ(export_rmsnorm(dir / "dps").exit_code, 0);
  const CommandResult result = run_shell("/usr/bin/python3 " + std::string(KERNELARC_SOURCE_DIR) +
                                         "/tests/data/export/build_and_check.py " +
                                         (dir / "build").string() + " " + (dir / "dps").string());
  if (result.exit_code == 77) GTEST_SKIP() << result.output;
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("ok dps (destination-passing)"), std::string::npos) << result.output;
}

}  // namespace

// `kernelarc prompt`: the prompt for a problem and a parent, without calling a model.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli/cli_test_support.h"
#include "source_dir.h"

namespace {

TEST(PromptCli, ShowsTheProblemTheParentsCodeAndTheBoard) {
  const auto problem = kSource / "problems/cpu/rmsnorm_f32";
  const auto result =
      run("prompt " + problem.string() + " --parent " + (problem / "solutions/naive").string() +
          " --board \"a conclusion to show\" --workspace " +
          (std::filesystem::temp_directory_path() / "kernelarc-prompt-test").string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("=== system ==="), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("# Task: make the parent faster"), std::string::npos);
  EXPECT_NE(result.output.find("Name: rmsnorm_f32"), std::string::npos);
  EXPECT_NE(result.output.find("```cpp main.cpp"), std::string::npos);
  EXPECT_NE(result.output.find("- a conclusion to show"), std::string::npos);
}

TEST(PromptCli, AMoveOnAParentNeedsOne) {
  const auto result =
      run("prompt " + (kSource / "problems/cpu/rmsnorm_f32").string() + " --move repair");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("--move repair: needs --parent"), std::string::npos)
      << result.output;
}

}  // namespace

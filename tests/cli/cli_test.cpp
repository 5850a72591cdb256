// The kernelarc executable end to end: exit codes, the eval table and the JSON traces, and
// clear one-line errors for malformed problem files.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_test_support.h"
#include "source_dir.h"

namespace {

namespace fs = std::filesystem;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kernelarc-cli-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A copy of a bundled problem whose file `name` is replaced by `content`.
  fs::path broken_problem(const std::string& name, const std::string& content) {
    const fs::path problem = dir_ / "problem";
    fs::copy(kSource / "problems/cpu/softmax_f32", problem, fs::copy_options::recursive);
    std::ofstream(problem / name) << content;
    return problem;
  }

  fs::path dir_;
};

TEST_F(CliTest, EvalPrintsTableAndWritesTraces) {
  const auto json_path = dir_ / "traces.json";
  const auto result = run("eval " + (kSource / "problems/cpu/softmax_f32").string() + " " +
                          (kSource / "problems/cpu/softmax_f32/solutions/optimized").string() +
                          " --workspace " + (dir_ / "ws").string() + " --json " +
                          json_path.string() + " --iterations 10 --timing-budget 0.2");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("median_ms"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("PASSED"), std::string::npos);
  std::ifstream file(json_path);
  const auto traces = nlohmann::json::parse(file);
  ASSERT_TRUE(traces.is_array());
  ASSERT_FALSE(traces.empty());
  for (const auto& trace : traces) {
    EXPECT_EQ(trace["definition"], "softmax_f32");
    EXPECT_EQ(trace["evaluation"]["status"], "PASSED");
    EXPECT_GT(trace["evaluation"]["performance"]["latency_ms"].get<double>(), 0);
    EXPECT_TRUE(trace["evaluation"]["performance"]["reference_latency_ms"].is_number());
    EXPECT_EQ(trace["kernelarc"]["trials_passed"], 10);
    EXPECT_TRUE(trace["kernelarc"]["audit_passed"].get<bool>());
    EXPECT_GE(trace["kernelarc"]["samples_ms"].size(), 10u);
  }
}

TEST_F(CliTest, FailingSolutionExitsOneWithStatus) {
  const auto result = run("eval " + (kSource / "problems/cpu/rmsnorm_f32").string() + " " +
                          (kSource / "tests/data/guard/compile_error").string() + " --workspace " +
                          (dir_ / "ws").string() + " --no-baseline");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_NE(result.output.find("COMPILE_ERROR"), std::string::npos) << result.output;
}

// `templates try --profile` attaches the profile record (on the CPU, why there is none) to the
// trace of the largest passed workload, as `eval --profile` does.
TEST_F(CliTest, TemplatesTryProfilesTheLargestPassedWorkload) {
  const auto json_path = dir_ / "try.json";
  const auto result = run("templates try " + (kSource / "problems/cpu/rmsnorm_f32").string() +
                          " rowreduce_cpu --profile --no-baseline --trials 1 --iterations 3" +
                          " --timing-budget 0.1 --workspace " + (dir_ / "ws").string() +
                          " --json " + json_path.string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("Nsight Compute is a CUDA feature"), std::string::npos)
      << result.output;
  std::ifstream file(json_path);
  const auto traces = nlohmann::json::parse(file);
  ASSERT_GE(traces.size(), 2u);
  int profiled = 0;
  for (const auto& trace : traces) profiled += trace["kernelarc"]["extra"].contains("profile");
  EXPECT_EQ(profiled, 1) << traces.dump();
}

struct Malformed {
  const char* file;
  const char* content;
  const char* message;  // must appear in the error
};

class CliMalformed : public CliTest, public ::testing::WithParamInterface<Malformed> {};

TEST_P(CliMalformed, GivesAClearErrorAndExitCodeTwo) {
  const auto problem = broken_problem(GetParam().file, GetParam().content);
  const auto result = run("eval " + problem.string() + " " +
                          (kSource / "problems/cpu/softmax_f32/solutions/naive").string() +
                          " --workspace " + (dir_ / "ws").string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find(GetParam().file), std::string::npos) << result.output;
  EXPECT_NE(result.output.find(GetParam().message), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find("internal error"), std::string::npos) << result.output;
}

INSTANTIATE_TEST_SUITE_P(
    Files, CliMalformed,
    ::testing::Values(Malformed{"definition.json", "{\"name\": \"x\",", "definition.json"},
                      Malformed{"definition.json", "[]", "object"},
                      Malformed{"workload.jsonl", "\nnot json\n", ":2"},
                      Malformed{"workload.jsonl", "{\"uuid\": 5, \"axes\": {}, \"inputs\": {}}\n",
                                "uuid"}));

}  // namespace

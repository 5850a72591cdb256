// discover_suite: which problem directories of a suite `bench` takes, and in which order.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "app/bench_suite.h"
#include "core/error.h"
#include "core/test_support.h"

namespace kernelarc {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> directories(const std::vector<SuiteProblem>& problems) {
  std::vector<std::string> names;
  for (const SuiteProblem& p : problems) names.push_back(p.dir.filename().string());
  return names;
}

class BenchSuite : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"softmax_f32", "layernorm_f32", "rmsnorm_f32"})
      fs::copy(fs::path(KERNELARC_SOURCE_DIR) / "problems/cpu" / name, suite_ / name,
               fs::copy_options::recursive);
  }
  testing::TempDir suite_;
};

TEST_F(BenchSuite, AllProblemsInDirectoryOrder) {
  EXPECT_EQ(directories(discover_suite(suite_.path(), {})),
            (std::vector<std::string>{"layernorm_f32", "rmsnorm_f32", "softmax_f32"}));
}

TEST_F(BenchSuite, ListedProblemsInTheOrderListed) {
  EXPECT_EQ(directories(discover_suite(suite_.path(), {"softmax_f32", "layernorm_f32"})),
            (std::vector<std::string>{"softmax_f32", "layernorm_f32"}));
}

TEST_F(BenchSuite, AnUnknownNameIsBadInputNamingIt) {
  try {
    discover_suite(suite_.path(), {"rmsnorm_f32", "no_such"});
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("no_such"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace kernelarc

// discover_suite: which problem directories of a suite `bench` takes, and in which order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

TEST_F(BenchSuite, AnUnknownNameAlsoShowsTheDefinitionsThatCannotBeRead) {
  // A definition that fails to load cannot be matched by its name: the error says why it failed.
  std::ofstream(suite_ / "softmax_f32" / "definition.json") << "{\"name\": \"broken\"";
  try {
    discover_suite(suite_.path(), {"broken"});
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("no problem of"), std::string::npos) << message;
    EXPECT_NE(message.find("these definitions cannot be read: "), std::string::npos) << message;
    EXPECT_NE(message.find("softmax_f32/definition.json"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace kernelarc

// Finding the Python interpreter: KERNELARC_PYTHON and the configured path are honoured, and
// an interpreter that is missing or lacks torch gives a message that says what to do.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "oracle/oracle.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

OracleOptions options_in(const TempDir& temp) {
  OracleOptions options;
  options.cache_dir = temp / "oracle";
  return options;
}

TEST(PythonDetection, BogusKernelarcPythonGivesAClearError) {
  TempDir temp;
  ScopedEnv env("KERNELARC_PYTHON", "/nonexistent/bin/python3");
  Problem problem = fixture_problem("py_scale");
  Oracle oracle(options_in(temp));
  std::string message = input_error_of([&] { oracle.prepare(problem, 1); });
  EXPECT_NE(message.find("no Python that can import torch"), std::string::npos) << message;
  EXPECT_NE(message.find("KERNELARC_PYTHON=/nonexistent/bin/python3"), std::string::npos)
      << message;
  EXPECT_NE(message.find("/nonexistent/bin/python3: cannot execute it"), std::string::npos)
      << message;
  EXPECT_NE(message.find("Set KERNELARC_PYTHON"), std::string::npos) << message;
}

/// A Python at temp/python that appends a line to `log` at each start, then runs the system's.
std::filesystem::path logging_python(const std::filesystem::path& temp,
                                     const std::filesystem::path& log) {
  return write_script(temp / "python",
                      "echo x >> '" + log.string() + "'\nexec /usr/bin/python3 \"$@\"");
}

TEST(PythonDetection, KernelarcPythonIsTheInterpreterUsed) {
  TempDir temp;
  auto marker = temp / "used";
  auto wrapper = logging_python(temp.path(), marker);
  ScopedEnv env("KERNELARC_PYTHON", wrapper.string());
  Oracle oracle(options_in(temp));
  std::string description = oracle.description();
  EXPECT_TRUE(std::filesystem::exists(marker));
  EXPECT_NE(description.find(", torch "), std::string::npos) << description;
}

TEST(PythonDetection, InterpreterWithoutTorchIsExplained) {
  TempDir temp;
  // -S drops site-packages, where torch lives.
  auto wrapper = write_script(temp / "python", "exec /usr/bin/python3 -S \"$@\"");
  ScopedEnv env("KERNELARC_PYTHON", std::nullopt);
  OracleOptions options = options_in(temp);
  options.python = wrapper.string();
  Problem problem = fixture_problem("py_scale");
  Oracle oracle(options);
  std::string message = input_error_of([&] { oracle.prepare(problem, 1); });
  EXPECT_NE(message.find("the configured interpreter"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot import torch"), std::string::npos) << message;
  EXPECT_EQ(oracle.python_runs(), 0);
}

TEST(PythonDetection, CachedProblemNeedsNoPython) {
  TempDir temp;
  Problem problem = fixture_problem("py_heuristics");
  {
    Oracle oracle(options_in(temp));
    oracle.prepare(problem, 1);
  }
  ScopedEnv env("KERNELARC_PYTHON", "/nonexistent/bin/python3");
  Oracle oracle(options_in(temp));
  oracle.prepare(problem, 1);
  EXPECT_EQ(values(oracle.expected(problem, problem.workloads.front(), 0)->at("out")),
            std::vector<double>(8, 1.0));
}

// `kernelarc import kernelbench` and `bench` make one oracle per file or problem; each found the
// interpreter anew (a Python start that imports torch, seconds each). Now the second oracle of
// the process starts none to describe it, and the one it runs jobs in is the same.
TEST(PythonDetection, FoundOncePerProcess) {
  TempDir temp;
  auto launches = temp / "launches";
  auto wrapper = logging_python(temp.path(), launches);
  ScopedEnv env("KERNELARC_PYTHON", wrapper.string());
  auto count = [&] {
    std::ifstream file(launches);
    return static_cast<int>(
        std::count(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>(), '\n'));
  };
  const std::string first = Oracle(options_in(temp)).description();
  ASSERT_NE(first.find(", torch "), std::string::npos) << first;
  EXPECT_EQ(count(), 1);
  for (int file = 0; file < 3; ++file) EXPECT_EQ(Oracle(options_in(temp)).description(), first);
  EXPECT_EQ(count(), 1);
}

}  // namespace
}  // namespace kernelarc

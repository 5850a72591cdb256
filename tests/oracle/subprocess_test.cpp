// The helper-process runner behind the Python bridge: exit codes, logs, the watchdog.
#include <gtest/gtest.h>

#include "oracle/subprocess.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

TEST(RunProcess, ReportsExitCodeAndLogsOutput) {
  TempDir temp;
  auto log = temp / "log";
  ProcessResult result =
      run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}, log, [] { return true; });
  EXPECT_TRUE(result.started);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(file_tail(log), "out\nerr");
}

TEST(RunProcess, WatchdogKillsTheProcessGroup) {
  TempDir temp;
  ProcessResult result =
      run_process({"sh", "-c", "sleep 30 & wait"}, temp / "log", [] { return false; });
  EXPECT_TRUE(result.stopped);
  EXPECT_EQ(result.signal, 9);
}

TEST(RunProcess, MissingProgramIsNotStarted) {
  TempDir temp;
  ProcessResult result = run_process({"/nonexistent/program"}, temp / "log", [] { return true; });
  EXPECT_FALSE(result.started);
  EXPECT_FALSE(result.spawn_error.empty());
}

TEST(FileTail, KeepsWholeLinesAtTheEnd) {
  TempDir temp;
  auto path = temp / "text";
  std::ofstream(path) << "first line\nsecond line\nthird\n\n";
  EXPECT_EQ(file_tail(path, 14), "third");
  EXPECT_EQ(file_tail(temp / "absent"), "");
}

}  // namespace
}  // namespace kernelarc

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
  EXPECT_EQ(result.status.exit_code, 3);
  EXPECT_EQ(file_tail(log), "out\nerr");
}

TEST(RunProcess, WatchdogKillsTheProcessGroup) {
  TempDir temp;
  ProcessResult result =
      run_process({"sh", "-c", "sleep 30 & wait"}, temp / "log", [] { return false; });
  EXPECT_TRUE(result.stopped);
  EXPECT_EQ(result.status.signal, 9);
  // Its own SIGKILL is no sign of memory trouble.
  EXPECT_TRUE(result.status.killed_by_parent);
  EXPECT_FALSE(killed_for_memory(result.status));
  EXPECT_EQ(describe_end(result, 8e9), "stopped by its watchdog");
}

TEST(RunProcess, ASIGKILLFromElsewhereIsExplainedAsTheOutOfMemoryKiller) {
  TempDir temp;
  ProcessResult result = run_process({"sh", "-c", "kill -9 $$"}, temp / "log", [] { return true; });
  ASSERT_TRUE(result.started);
  EXPECT_FALSE(result.stopped);
  EXPECT_EQ(result.status.signal, 9);
  EXPECT_GT(result.status.max_rss_kib, 0);
  const std::string text = describe_end(result, 8.59e9);
  EXPECT_EQ(text.rfind("killed by signal SIGKILL (Killed), most likely by the kernel's "
                       "out-of-memory killer: it peaked at ",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("its workload's inputs and outputs take 8.59 GB"), std::string::npos) << text;
  EXPECT_NE(text.find("GB available"), std::string::npos) << text;
}

TEST(RunProcess, MissingProgramIsNotStarted) {
  TempDir temp;
  ProcessResult result = run_process({"/nonexistent/program"}, temp / "log", [] { return true; });
  EXPECT_FALSE(result.started);
  EXPECT_FALSE(result.spawn_error.empty());
  EXPECT_EQ(describe_end(result), "cannot execute it: " + result.spawn_error);
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

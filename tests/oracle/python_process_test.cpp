// Python scripts run through the interpreter host (python_process.h): forked with torch imported,
// yet seen by their caller as a process of their own.
#include "oracle/python_process.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "backend/child_environment.h"
#include "backend/process.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

// Reports what a script can see of how it was started, then ends as its first argument says.
constexpr const char* kProbe = R"(import os, sys
print("args", sys.argv[1:])
print("cwd", os.getcwd())
print("parent", os.getppid())
print("group", os.getpgid(0) == os.getpid())
print("torch", "torch" in sys.modules)
os.write(3, b"through fd 3")
if sys.argv[1] == "raise":
    raise ValueError("boom")
if sys.argv[1] == "sleep":
    import time
    time.sleep(60)
if sys.argv[1] == "selfkill":
    import signal
    os.kill(os.getpid(), signal.SIGKILL)
sys.exit(int(sys.argv[1]) if sys.argv[1].isdigit() else 0)
)";

class PythonProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto python = find_executable(testing::torch_python());
    if (testing::torch_python().empty() || !python) GTEST_SKIP() << "no Python with torch";
    python_ = *python;
    script_ = temp_.write("probe.py", kProbe);
  }

  /// Runs the probe with `argument`; its output, and what it wrote to fd 3, come back.
  struct Run {
    ExitStatus status;
    bool hosted = false;
    std::string output;
    std::string fd3;
  };
  Run run(const std::string& argument, const std::string& interpreter = "") {
    const std::filesystem::path log = temp_ / ("log-" + std::to_string(++runs_));
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    int pipe_fds[2];
    EXPECT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    Run result;
    {
      PythonProcess process(interpreter.empty() ? python_ : interpreter,
                            {script_.string(), argument}, log_fd, {{3, pipe_fds[1]}},
                            current_environment(), /*may_use_host=*/true);
      ::close(pipe_fds[1]);
      ::close(log_fd);
      result.hosted = process.hosted();
      char buffer[64] = {};
      const ssize_t got = ::read(pipe_fds[0], buffer, sizeof buffer - 1);
      if (got > 0) result.fd3.assign(buffer, static_cast<std::size_t>(got));
      if (argument == "sleep") process.kill_group();
      result.status = process.reap();
    }
    ::close(pipe_fds[0]);
    std::ifstream text(log);
    std::stringstream all;
    all << text.rdbuf();
    result.output = all.str();
    return result;
  }

  TempDir temp_;
  std::string python_;
  std::filesystem::path script_;
  int runs_ = 0;
};

std::string line_of(const std::string& output, const std::string& key) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
  return "";
}

TEST_F(PythonProcessTest, AHostedScriptSeesItsArgumentsDirectoryDescriptorsAndExitCode) {
  const Run first = run("7");
  ASSERT_TRUE(first.hosted) << first.output;
  EXPECT_FALSE(first.status.signaled);
  EXPECT_EQ(first.status.exit_code, 7) << first.output;
  EXPECT_EQ(line_of(first.output, "args"), "['7']") << first.output;
  EXPECT_EQ(line_of(first.output, "cwd"), std::filesystem::current_path().string());
  EXPECT_EQ(line_of(first.output, "group"), "True");
  EXPECT_EQ(line_of(first.output, "torch"), "True") << "the host imported torch before forking";
  EXPECT_EQ(first.fd3, "through fd 3");
  // Forked by the host, not by this process; a second script comes from the same host.
  const std::string host = line_of(first.output, "parent");
  EXPECT_NE(host, std::to_string(getpid()));
  const Run second = run("0");
  EXPECT_EQ(second.status.exit_code, 0);
  EXPECT_EQ(line_of(second.output, "parent"), host);
}

TEST_F(PythonProcessTest, AKilledScriptIsReportedBySignal) {
  const Run killed = run("sleep");
  ASSERT_TRUE(killed.hosted) << killed.output;
  EXPECT_TRUE(killed.status.signaled);
  EXPECT_EQ(killed.status.signal, 9);
  EXPECT_TRUE(killed.status.killed_by_parent) << "kill_group sent it";
}

TEST_F(PythonProcessTest, ASIGKILLFromElsewhereComesWithThePeakResidentSize) {
  // As the kernel's out-of-memory killer would: not sent by this process.
  const Run killed = run("selfkill");
  ASSERT_TRUE(killed.hosted) << killed.output;
  EXPECT_EQ(killed.status.signal, 9);
  EXPECT_FALSE(killed.status.killed_by_parent);
  // The host reports its child's peak; a forked interpreter with torch holds well over 10 MB.
  EXPECT_GT(killed.status.max_rss_kib, 10 << 10);
}

TEST_F(PythonProcessTest, AnErrorIsReportedAsAFreshInterpreterReportsIt) {
  const Run failed = run("raise");
  ASSERT_TRUE(failed.hosted) << failed.output;
  EXPECT_EQ(failed.status.exit_code, 1) << failed.output;
  EXPECT_NE(failed.output.find("ValueError: boom"), std::string::npos) << failed.output;
  // Nothing of the host: its frames and the exception that made the child are not shown.
  EXPECT_EQ(failed.output.find("kernelarc_python_host"), std::string::npos) << failed.output;
  EXPECT_EQ(failed.output.find("During handling"), std::string::npos) << failed.output;
}

TEST_F(PythonProcessTest, TurnedOffTheInterpreterIsAChildOfThisProcess) {
  ScopedEnv off("KERNELARC_PYTHON_HOST", "0");
  const Run alone = run("3");
  EXPECT_FALSE(alone.hosted);
  EXPECT_EQ(alone.status.exit_code, 3) << alone.output;
  EXPECT_EQ(line_of(alone.output, "parent"), std::to_string(getpid()));
  EXPECT_EQ(line_of(alone.output, "torch"), "False");
  EXPECT_EQ(alone.fd3, "through fd 3");
}

TEST_F(PythonProcessTest, AWrapperScriptIsExecutedNeverHandedTheHostScript) {
  const auto wrapper = write_script(temp_ / "python3", "exec '" + python_ + "' \"$@\"");
  const Run wrapped = run("5", wrapper.string());
  EXPECT_FALSE(wrapped.hosted);
  EXPECT_EQ(wrapped.status.exit_code, 5) << wrapped.output;
}

}  // namespace
}  // namespace kernelarc

// Fault: the worker is killed with SIGKILL from outside while a candidate's ka_run is running.
// The guard must report RUNTIME_ERROR naming the signal, and the next evaluation on the same
// guard must pass on a restarted worker. (tests/backend/worker_test.cpp kills a worker between
// calls, on the Worker itself.)
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>

#include <algorithm>
#include <future>
#include <vector>

#include "eval/guard_harness.h"
#include "fault_test_support.h"

namespace kernelarc::faults {
namespace {

/// The kernelarc workers among this process's children.
std::vector<pid_t> worker_children() {
  std::vector<pid_t> workers;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_text(entry.path() / "stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos || std::atoi(stat.c_str() + close + 4) != getpid()) continue;
    if (read_text(entry.path() / "cmdline").find("worker") != std::string::npos)
      workers.push_back(std::stoi(name));
  }
  return workers;
}

/// Whether the process is blocked in a sleep (the candidate's, since an idle worker waits in read).
bool asleep(pid_t pid) {
  const std::string call = read_text("/proc/" + std::to_string(pid) + "/syscall");
  const long number = std::atol(call.c_str());
  return !call.empty() && (number == SYS_clock_nanosleep || number == SYS_nanosleep);
}

TEST_F(FaultTest, WorkerKilledMidCallIsARuntimeErrorAndTheNextEvaluationPasses) {
  testing::GuardHarness harness(
      kSource / "problems/cpu/rmsnorm_f32", "cpu", [](GuardOptions& options) {
        options.correctness_trials = 2;
        options.warmup = 1;
        options.iterations = 3;
        options.min_iterations = 3;
        options.time_baselines = false;
        options.auto_calibrate = false;  // calibrated once where a test needs the floor
      });
  const Workload workload = harness.pick_workload(false);

  auto evaluation = std::async(
      std::launch::async, [&] { return harness.evaluate(kData / "faults/sleeping", workload); });
  // Kill the worker the first time it is seen inside the candidate's sleep.
  pid_t worker = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline &&
         evaluation.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
    for (const pid_t child : worker_children())
      if (asleep(child)) worker = child;
    if (worker > 0) break;
  }
  ASSERT_GT(worker, 0) << "the candidate was never seen running";
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  const Trace killed = evaluation.get();

  EXPECT_EQ(killed.status, EvalStatus::RuntimeError) << killed.log;
  EXPECT_NE(killed.log.find("SIGKILL"), std::string::npos) << killed.log;
  EXPECT_FALSE(killed.latency_ms.has_value());

  const Trace next =
      harness.evaluate(kSource / "problems/cpu/rmsnorm_f32/solutions/naive", workload);
  EXPECT_EQ(next.status, EvalStatus::Passed) << next.log;
  const auto workers = worker_children();
  EXPECT_EQ(std::find(workers.begin(), workers.end(), worker), workers.end())
      << "the killed worker was not replaced";
}

}  // namespace
}  // namespace kernelarc::faults

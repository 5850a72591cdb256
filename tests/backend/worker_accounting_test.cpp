// The parent's account of a process's threads (worker_accounting.h), on this test process.
#include "backend/worker/worker_accounting.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace kernelarc {
namespace {

/// Spins until this thread has run for `duration` of CPU time (not wall time: on a loaded
/// machine the thread may wait for a core).
void busy_for(std::chrono::milliseconds duration) {
  auto cpu_now = [] {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
  };
  const auto end = cpu_now() + duration;
  volatile unsigned sink = 0;
  while (cpu_now() < end) sink = sink + 1;
}

TEST(WorkerAccounting, CountsTheCpuTimeOfEachThread) {
  const TaskTimes before = read_task_times(getpid());
  ASSERT_TRUE(before.valid);
  ASSERT_TRUE(before.cpu_ns.count(getpid()));
  busy_for(std::chrono::milliseconds(30));
  std::thread helper([] { busy_for(std::chrono::milliseconds(30)); });
  TaskTimes during;
  while (during.tasks() < before.tasks() + 1 || !during.valid) during = read_task_times(getpid());
  helper.join();
  const TaskTimes after = read_task_times(getpid());
  // The main thread's 30 ms show; the helper's, which ended before `after`, are lost: the count
  // never overstates.
  EXPECT_GE(cpu_used_by(before, after, getpid()), 20e6);
  EXPECT_LT(cpu_used_except(before, after, getpid()), 10e6);
  EXPECT_GE(during.tasks(), before.tasks() + 1);
}

TEST(WorkerAccounting, CountsTheTimeAThreadWaitedForACore) {
  // Two threads that spin on one core take turns: each waits while the other runs.
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const TaskTimes before = read_task_times(getpid());
  std::thread rival([] { busy_for(std::chrono::milliseconds(60)); });
  busy_for(std::chrono::milliseconds(60));
  rival.join();
  const TaskTimes after = read_task_times(getpid());
  sched_setaffinity(0, sizeof all, &all);
  ASSERT_TRUE(after.valid);
  EXPECT_GE(run_queue_wait_of(before, after, getpid()), 5e6);
}

TEST(WorkerAccounting, AProcessThatIsGoneReadsAsInvalid) {
  EXPECT_FALSE(read_task_times(999999999).valid);
}

}  // namespace
}  // namespace kernelarc

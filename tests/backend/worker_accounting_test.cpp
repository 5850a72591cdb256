// The parent's account of a process's threads (worker_accounting.h), on this test process.
#include "backend/worker/worker_accounting.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

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

/// Spins for `duration` of wall time without asking for its own CPU time: a thread that asks
/// brings its count up to date, which a worker's call does not do.
void spin_for(std::chrono::milliseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  volatile unsigned sink = 0;
  while (std::chrono::steady_clock::now() < end) sink = sink + 1;
}

TEST(WorkerAccounting, AReadingAtRestHoldsAllTheWorkBeforeTheProcessWaits) {
  // As a worker does: a burst of work, a reply, a little more work, then a blocking read. Read
  // while the child still runs, its count lags by the time since its last tick and misses what
  // it does after the reply; read at rest, it is final: the same as a reading long after.
  // On separate cores the reply wakes the parent without stopping the child, as on a machine
  // whose other core was idle; a wakeup on the child's core would bring its count up to date.
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  std::vector<int> cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &all)) cores.push_back(cpu);
  if (cores.size() < 2) GTEST_SKIP() << "needs two cores";
  auto pin_to = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof one, &one) == 0;
  };
  int reply[2], request[2];
  ASSERT_EQ(pipe(reply), 0);
  ASSERT_EQ(pipe(request), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!pin_to(cores[1])) _exit(1);
    char byte = 1;
    for (int round = 0; round < 5; ++round) {
      spin_for(std::chrono::milliseconds(6));
      if (write(reply[1], &byte, 1) != 1) _exit(1);
      spin_for(std::chrono::milliseconds(1));
      if (read(request[0], &byte, 1) != 1) _exit(1);
    }
    _exit(0);
  }
  ASSERT_TRUE(pin_to(cores[0]));
  for (int round = 0; round < 5; ++round) {
    char byte = 0;
    ASSERT_EQ(read(reply[0], &byte, 1), 1);
    const TaskTimes at_rest = read_task_times_at_rest(child, std::chrono::seconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const TaskTimes later = read_task_times(child);
    ASSERT_TRUE(at_rest.valid && later.valid);
    EXPECT_EQ(at_rest.cpu_ns.at(child), later.cpu_ns.at(child)) << "round " << round;
    ASSERT_EQ(write(request[1], &byte, 1), 1);
  }
  sched_setaffinity(0, sizeof all, &all);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (int fd : {reply[0], reply[1], request[0], request[1]}) close(fd);
}

TEST(WorkerAccounting, AProcessThatIsGoneReadsAsInvalid) {
  EXPECT_FALSE(read_task_times(999999999).valid);
}

}  // namespace
}  // namespace kernelarc

// The parent's bounds on the times a worker reports (timing_bounds.h): honest observations pass,
// each kind of forgery or untimed work is named.
#include <gtest/gtest.h>

#include <vector>

#include "eval/timing_bounds.h"

namespace kernelarc {
namespace {

constexpr double kMs = 1e6;

RequestOverhead overhead() {
  std::vector<ParentObservation> nulls(7);
  for (auto& observed : nulls) {
    observed.valid = true;
    observed.wall_ns = 0.3 * kMs;  // a Run request: the call alone (staged_call.h)
    observed.main_cpu_ns = 0.15 * kMs;
  }
  nulls.front().wall_ns = 50 * kMs;  // the first faults the buffers in: dropped
  return summarize_overhead(nulls);
}

/// Requests of an honest single-threaded call of `call_ms`, with `helpers` idle pool threads.
std::vector<TimedRequest> honest(double call_ms, int helpers = 0) {
  std::vector<TimedRequest> requests(10);
  for (auto& request : requests) {
    request.reported_ns = call_ms * kMs;
    request.observed.valid = true;
    request.observed.wall_ns = (0.35 + call_ms) * kMs;
    request.observed.main_cpu_ns = (0.2 + call_ms) * kMs;
    request.observed.other_threads = helpers;
    request.observed.idle_wall_ns = 5 * kMs;
    request.observed.idle_cpu_ns = 0.01 * kMs;
  }
  return requests;
}

TEST(TimingBounds, TheFirstNullRequestIsDropped) {
  EXPECT_DOUBLE_EQ(overhead().wall_max_ns, 0.3 * kMs);
}

TEST(TimingBounds, HonestRequestsPass) {
  EXPECT_EQ(timing_violation(honest(0.001), overhead(), true, 2), std::nullopt);
  EXPECT_EQ(timing_violation(honest(30), overhead(), true, 2), std::nullopt);
  auto pool = honest(4, 3);
  for (auto& request : pool) request.observed.other_cpu_ns = 3 * 4 * kMs;  // busy in the call
  EXPECT_EQ(timing_violation(pool, overhead(), true, 4), std::nullopt);
}

TEST(TimingBounds, HonestRequestsOnALoadedMachinePass) {
  // Under ctest -j2 on two cores the calling thread waits for a core during the request (the
  // parent subtracts it from the wall time), and the worker's own code around the call runs
  // slower than it did for the null kernel.
  auto loaded = honest(3);
  for (auto& request : loaded) {
    request.observed.main_wait_ns = 40 * kMs;
    request.observed.wall_ns += 40 * kMs;
    request.observed.main_cpu_ns += 0.25 * kMs;
  }
  EXPECT_EQ(timing_violation(loaded, overhead(), true, 2), std::nullopt);
  // The same wait unaccounted for is what a forged time looks like.
  for (auto& request : loaded) request.observed.main_wait_ns = 0;
  EXPECT_TRUE(timing_violation(loaded, overhead(), false, 2).has_value());
}

TEST(TimingBounds, TheGuardsOwnWaitForACoreIsNotTheCall) {
  // The worker replied on time, but the parent's thread, woken by the reply, waited 4 ms for a
  // core before it read its clock (seen under four builds on two cores).
  auto loaded = honest(0.4);
  for (auto& request : loaded) {
    request.observed.parent_wait_ns = 4 * kMs;
    request.observed.wall_ns += 4 * kMs;
  }
  EXPECT_EQ(timing_violation(loaded, overhead(), true, 2), std::nullopt);
  for (auto& request : loaded) request.observed.parent_wait_ns = 0;
  EXPECT_TRUE(timing_violation(loaded, overhead(), true, 2).has_value());
}

TEST(TimingBounds, AReportedTimeFarBelowTheWallClockIsRefused) {
  auto forged = honest(20);
  for (auto& request : forged) request.reported_ns = 0.001 * kMs;
  const auto cuda = timing_violation(forged, overhead(), false, 2);
  ASSERT_TRUE(cuda.has_value());
  EXPECT_NE(cuda->find("guard's own clock"), std::string::npos) << *cuda;
}

TEST(TimingBounds, CallingThreadCpuBeyondTheReportedTimeIsRefused) {
  auto forged = honest(1);
  for (auto& request : forged) {
    request.reported_ns = 0.01 * kMs;
    request.observed.main_cpu_ns += 4 * kMs;  // the wall clock alone would let this pass
  }
  const auto violation = timing_violation(forged, overhead(), true, 2);
  ASSERT_TRUE(violation.has_value());
  EXPECT_NE(violation->find("calling thread"), std::string::npos) << *violation;
  EXPECT_EQ(timing_violation(forged, overhead(), false, 2), std::nullopt);  // CUDA: GPU time
}

TEST(TimingBounds, HelperThreadsWorkingBeyondTheCallAreRefused) {
  auto helped = honest(0.05, 1);
  for (auto& request : helped) request.observed.other_cpu_ns = 3 * kMs;
  const auto violation = timing_violation(helped, overhead(), true, 2);
  ASSERT_TRUE(violation.has_value());
  EXPECT_NE(violation->find("outside the timed call"), std::string::npos) << *violation;
}

TEST(TimingBounds, CpuUsedWhileWaitingIsRefused) {
  auto busy = honest(0.05, 1);
  for (auto& request : busy) request.observed.idle_cpu_ns = 4 * kMs;
  const auto violation = timing_violation(busy, overhead(), true, 2);
  ASSERT_TRUE(violation.has_value());
  EXPECT_NE(violation->find("between its requests"), std::string::npos) << *violation;
}

TEST(TimingBounds, APoolWindingDownAfterEachCallPassesButNotOneWorkingBetweenCalls) {
  // Measured under ctest -j2 on two cores: an OpenMP team of 64 (63 besides the main thread)
  // used 6.85 ms of CPU in 5 gaps after its calls had returned, going back to sleep.
  auto pool = honest(2, 63);
  pool.resize(5);
  for (auto& request : pool) {
    request.observed.other_cpu_ns = 2 * 2 * kMs;  // two cores busy during the call
    request.observed.idle_cpu_ns = 1.37 * kMs;
  }
  EXPECT_EQ(timing_violation(pool, overhead(), true, 2), std::nullopt);
  for (auto& request : pool) request.observed.idle_cpu_ns = 4 * kMs;
  const auto violation = timing_violation(pool, overhead(), true, 2);
  ASSERT_TRUE(violation.has_value());
  EXPECT_NE(violation->find("between its requests"), std::string::npos) << *violation;
}

TEST(TimingBounds, NothingIsDecidedWithoutTheParentsObservations) {
  auto forged = honest(20);
  for (auto& request : forged) request.reported_ns = 0;
  forged.front().observed.valid = false;
  EXPECT_EQ(timing_violation(forged, overhead(), true, 2), std::nullopt);
}

}  // namespace
}  // namespace kernelarc

// execute_staged_call against a recording executor: the order and shape of the three requests,
// what the result keeps of each, and where a failure stops the call. The same function serves
// the guard's worker and `kernelarc profile-run`, so these hold for both.
#include "backend/worker/staged_call.h"

#include <gtest/gtest.h>

#include <vector>

namespace kernelarc {
namespace {

struct Recorder {
  std::vector<ExecuteRequest> requests;
  /// The reply per phase (indexed by RequestPhase).
  ExecuteResult replies[4];

  RequestExecutor executor() {
    return [this](const ExecuteRequest& request) {
      requests.push_back(request);
      return replies[static_cast<int>(request.phase)];
    };
  }
};

ExecuteResult reply(double host_link_seconds, double idle_cpu_ns, double other_cpu_ns,
                    double wall_ns) {
  ExecuteResult result;
  result.host_link_seconds = host_link_seconds;
  result.observed.idle_cpu_ns = idle_cpu_ns;
  result.observed.other_cpu_ns = other_cpu_ns;
  result.observed.wall_ns = wall_ns;
  return result;
}

ExecuteRequest whole_request(int warmup, int iterations) {
  ExecuteRequest request;
  request.warmup = warmup;
  request.iterations = iterations;
  request.copy_back = true;
  return request;
}

TEST(StagedCall, MakesOneCallAsStageRunCollectAndKeepsRunsTimes) {
  Recorder recorder;
  recorder.replies[static_cast<int>(RequestPhase::Stage)] = reply(0.25, 10, 100, 1000);
  ExecuteResult run = reply(0, 5, 7, 2000);
  run.times_ns = {1234};
  recorder.replies[static_cast<int>(RequestPhase::Run)] = run;
  recorder.replies[static_cast<int>(RequestPhase::Collect)] = reply(0.5, 20, 200, 3000);

  const ExecuteResult result =
      execute_staged_call(recorder.executor(), whole_request(/*warmup=*/2, /*iterations=*/5));

  ASSERT_EQ(recorder.requests.size(), 3u);
  EXPECT_EQ(recorder.requests[0].phase, RequestPhase::Stage);
  EXPECT_EQ(recorder.requests[1].phase, RequestPhase::Run);
  EXPECT_EQ(recorder.requests[2].phase, RequestPhase::Collect);
  for (const ExecuteRequest& request : recorder.requests) {
    EXPECT_EQ(request.warmup, 0);  // one call, whatever the request asked
    EXPECT_EQ(request.iterations, 1);
  }
  EXPECT_TRUE(recorder.requests[2].copy_back);
  EXPECT_EQ(result.outcome, CallOutcome::Ok);
  EXPECT_EQ(result.times_ns, std::vector<double>{1234});
  // The parent's observation is Run's; Stage and Collect count as time between calls.
  EXPECT_DOUBLE_EQ(result.observed.wall_ns, 2000);
  EXPECT_DOUBLE_EQ(result.observed.other_cpu_ns, 7);
  EXPECT_DOUBLE_EQ(result.observed.idle_cpu_ns, 5 + (10 + 100) + (20 + 200));
  EXPECT_DOUBLE_EQ(result.observed.idle_wall_ns, 1000 + 3000);
  EXPECT_DOUBLE_EQ(result.host_link_seconds, 0.75);
}

TEST(StagedCall, AnUncheckedCallIsCollectedWithoutCopyingBack) {
  Recorder recorder;
  execute_staged_call(recorder.executor(), whole_request(0, 1), /*collect=*/false);
  ASSERT_EQ(recorder.requests.size(), 3u);
  EXPECT_EQ(recorder.requests[2].phase, RequestPhase::Collect);
  EXPECT_FALSE(recorder.requests[2].copy_back);
}

TEST(StagedCall, AFailedRunEndsTheCallWithItsOutcome) {
  Recorder recorder;
  ExecuteResult failed;
  failed.outcome = CallOutcome::OutOfBounds;
  failed.message = "output 0 wrote past its end";
  recorder.replies[static_cast<int>(RequestPhase::Run)] = failed;
  const ExecuteResult result = execute_staged_call(recorder.executor(), whole_request(0, 1));
  EXPECT_EQ(recorder.requests.size(), 2u);  // no Collect after a failed Run
  EXPECT_EQ(result.outcome, CallOutcome::OutOfBounds);
  EXPECT_EQ(result.message, "output 0 wrote past its end");
}

TEST(StagedCall, AFailedStageRunsNothing) {
  Recorder recorder;
  recorder.replies[static_cast<int>(RequestPhase::Stage)].outcome = CallOutcome::OutOfMemory;
  const ExecuteResult result = execute_staged_call(recorder.executor(), whole_request(0, 1));
  EXPECT_EQ(recorder.requests.size(), 1u);
  EXPECT_EQ(result.outcome, CallOutcome::OutOfMemory);
}

}  // namespace
}  // namespace kernelarc

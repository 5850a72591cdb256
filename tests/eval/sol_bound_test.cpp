// The SOL score never exceeds 1. A kernel below T_SOL beat a bound that no honest kernel beats,
// so the bound is wrong: the score is capped at 1, the trace says bound_beaten and the advice
// names `kernelarc calibrate`. (softmax_f32 on the H200 once scored 1.012.)
#include <gtest/gtest.h>

#include <string>

#include "eval/speed_of_light.h"
#include "eval/trace.h"

namespace kernelarc {
namespace {

Trace passed_trace(double kernel_ms, double eager_ms, double sol_ms) {
  Trace trace;
  trace.status = EvalStatus::Passed;
  trace.latency_ms = TimingSummary{.median = kernel_ms};
  trace.eager_ms = eager_ms;
  trace.sol_ms = sol_ms;
  return trace;
}

TEST(SolBound, ScoreIsTheSolExecBenchFormulaAboveTheBound) {
  EXPECT_DOUBLE_EQ(sol_score(2.0, 3.0, 1.0), 1.0 / (1.0 + 1.0 / 2.0));
  EXPECT_DOUBLE_EQ(sol_score(3.0, 3.0, 1.0), 0.5);  // as fast as the baseline
  EXPECT_DOUBLE_EQ(sol_score(1.0, 3.0, 1.0), 1.0);  // at the bound
}

TEST(SolBound, BelowTheBoundScoresOneAndBeatsIt) {
  EXPECT_DOUBLE_EQ(sol_score(0.9, 3.0, 1.0), 1.0);
  EXPECT_TRUE(sol_bound_beaten(0.9, 1.0));
  EXPECT_FALSE(sol_bound_beaten(1.0, 1.0));
  EXPECT_FALSE(sol_bound_beaten(0.9, std::nullopt));
}

TEST(SolBound, BaselineAtTheBoundScoresByWhetherTheKernelReachesIt) {
  EXPECT_DOUBLE_EQ(sol_score(1.0, 0.8, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(sol_score(1.2, 0.8, 1.0), 0.0);
}

TEST(SolBound, TraceCapsTheScoreAndRecordsTheBeatenBound) {
  const Trace beaten = passed_trace(0.95, 3.0, 1.0);
  ASSERT_TRUE(beaten.sol_score());
  EXPECT_DOUBLE_EQ(*beaten.sol_score(), 1.0);
  EXPECT_TRUE(beaten.sol_bound_beaten());
  const OrderedJson json = trace_to_json(beaten);
  EXPECT_EQ(json["kernelarc"]["sol"]["score"], 1.0);
  EXPECT_EQ(json["kernelarc"]["sol"]["bound_beaten"], true);

  const Trace honest = passed_trace(2.0, 3.0, 1.0);
  EXPECT_FALSE(honest.sol_bound_beaten());
  EXPECT_EQ(trace_to_json(honest)["kernelarc"]["sol"]["bound_beaten"], false);
}

TEST(SolBound, AdviceSaysTheBoundIsWrongAndHowToFixIt) {
  const std::string advice = kSolBoundBeatenAdvice;
  EXPECT_NE(advice.find("the bound is wrong"), std::string::npos);
  EXPECT_NE(advice.find("kernelarc calibrate"), std::string::npos);
}

}  // namespace
}  // namespace kernelarc

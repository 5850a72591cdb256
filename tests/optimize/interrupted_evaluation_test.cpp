// An evaluation cut short by a stop request (Interrupted: the oracle throws it when the flag of
// cli/interrupt.h ends the reference's draw) stops the run as a stop between candidates does,
// wherever it comes: the baseline, the evaluator's preparation, a candidate, the finalists, a
// pool with others in flight. No stop flag is given: the exception alone must stop the run. The
// cut evaluation is not recorded, every one that finished is, the run is left stopped, and its
// resume measures only the rest and ends as the straight run.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <optional>
#include <ostream>
#include <string>

#include "core/test_support.h"
#include "optimize/search_setup.h"
#include "orchestrator_test_support.h"

namespace kernelarc {
namespace {

using testing::kProblem;
using testing::LandscapeEvaluator;
using testing::ReorderingPool;
using testing::run_orchestrator;
using testing::sequence;
using testing::SilentProgress;
using testing::TempDir;

constexpr int kBudget = 20;
constexpr int kFinalCalls = 4 * 3;  // 3 finalists and the baseline, 3 rounds

/// Where the evaluator is cut short, and what the run measured before.
struct Cut {
  const char* where;
  std::optional<int> at;    ///< LandscapeEvaluator::interrupt_at_
  bool in_prepare = false;  ///< LandscapeEvaluator::interrupt_prepare_
  int recorded = 0;         ///< evaluations stored: the baseline's and the candidates'
  int final_calls = 0;      ///< finalists' evaluations begun
};

void PrintTo(const Cut& cut, std::ostream* out) {
  *out << cut.where;
}

class InterruptedEvaluationTest : public ::testing::Test {
 protected:
  InterruptedEvaluationTest() : setup_(kProblem, SearchSetupOptions{}) {}

  OptimizeSummary optimize(Workspace& workspace, LandscapeEvaluator& evaluator,
                           EvaluationPool* pool = nullptr, std::optional<int64_t> resume = {}) {
    OptimizeOptions options;
    options.budget = kBudget;
    options.in_flight = pool ? static_cast<int>(pool->capacity()) : 1;
    return run_orchestrator(setup_.target(setup_.problem().workloads), evaluator, pool, workspace,
                            options, progress_, resume);
  }

  /// The stopped run: no finalists, `recorded` evaluations stored.
  static void expect_stopped(Workspace& workspace, const OptimizeSummary& stopped, int recorded) {
    EXPECT_EQ(stopped.interrupted_by, SIGINT);
    EXPECT_EQ(stopped.stop_reason, "interrupted by SIGINT");
    EXPECT_TRUE(stopped.finalists.empty());
    EXPECT_EQ(workspace.database().find_run(stopped.run_id)->status, RunStatus::Stopped);
    EXPECT_EQ(workspace.database().budget_of(stopped.run_id).used, recorded);
  }

  /// Resumed through `pool` (over `resumed`) when given, the run measures what it had not and
  /// ends as the uninterrupted one.
  void expect_resumes_straight(Workspace& workspace, int64_t run_id, int recorded,
                               LandscapeEvaluator& resumed, EvaluationPool* pool = nullptr) {
    TempDir straight_dir;
    Workspace straight(straight_dir.path());
    LandscapeEvaluator straight_evaluator(setup_.problem());
    std::optional<ReorderingPool> straight_pool;
    if (pool) straight_pool.emplace(straight_evaluator, pool->capacity(), 1);
    const auto straight_summary =
        optimize(straight, straight_evaluator, pool ? &*straight_pool : nullptr);

    const auto summary = optimize(workspace, resumed, pool, run_id);
    EXPECT_EQ(summary.interrupted_by, 0);
    EXPECT_EQ(workspace.database().find_run(run_id)->status, RunStatus::Finished);
    EXPECT_EQ(resumed.calls_ - resumed.final_calls_, 1 + kBudget - recorded);
    EXPECT_EQ(resumed.final_calls_, kFinalCalls);
    EXPECT_TRUE(workspace.database().unevaluated_candidates(run_id).empty());
    EXPECT_EQ(sequence(workspace.database(), run_id),
              sequence(straight.database(), straight_summary.run_id));
    ASSERT_FALSE(summary.finalists.empty());
    EXPECT_EQ(summary.finalists.front().label, straight_summary.finalists.front().label);
  }

  SearchSetup setup_;
  SilentProgress progress_;
};

class InterruptedOnTheCallersThread : public InterruptedEvaluationTest,
                                      public ::testing::WithParamInterface<Cut> {};

TEST_P(InterruptedOnTheCallersThread, StopsTheRunResumably) {
  const Cut& cut = GetParam();
  TempDir dir;
  Workspace workspace(dir.path());
  LandscapeEvaluator evaluator(setup_.problem());
  evaluator.interrupt_at_ = cut.at;
  evaluator.interrupt_prepare_ = cut.in_prepare;
  const auto stopped = optimize(workspace, evaluator);
  expect_stopped(workspace, stopped, cut.recorded);
  EXPECT_EQ(evaluator.calls_, cut.recorded) << "nothing measured after the cut";
  EXPECT_EQ(evaluator.final_calls_, cut.final_calls);
  EXPECT_EQ(stopped.evaluated, std::max(cut.recorded - 1, 0));
  LandscapeEvaluator resumed(setup_.problem());
  expect_resumes_straight(workspace, stopped.run_id, cut.recorded, resumed);
}

INSTANTIATE_TEST_SUITE_P(Everywhere, InterruptedOnTheCallersThread,
                         ::testing::Values(Cut{"baseline", 0, false, 0, 0},
                                           Cut{"prepare", std::nullopt, true, 1, 0},
                                           Cut{"candidate", 8, false, 8, 0},
                                           Cut{"finalists", 1 + kBudget, false, 1 + kBudget, 1}),
                         [](const ::testing::TestParamInfo<Cut>& info) {
                           return std::string(info.param.where);
                         });

// Cut in the pool with others in flight: those still come back and are stored.
TEST_F(InterruptedEvaluationTest, InThePoolTheEvaluationsInFlightBesideItAreStored) {
  TempDir dir;
  Workspace workspace(dir.path());
  int64_t run_id = 0;
  int recorded = 0;
  {
    LandscapeEvaluator evaluator(setup_.problem());
    evaluator.interrupt_at_ = 9;
    ReorderingPool pool(evaluator, 3, 2);
    const auto stopped = optimize(workspace, evaluator, &pool);
    run_id = stopped.run_id;
    recorded = evaluator.calls_;
    EXPECT_GT(recorded, 9) << "the evaluations in flight beside the cut one were received";
    expect_stopped(workspace, stopped, recorded);
    EXPECT_EQ(evaluator.final_calls_, 0);
  }
  LandscapeEvaluator resumed(setup_.problem());
  ReorderingPool pool(resumed, 3, 3);
  expect_resumes_straight(workspace, run_id, recorded, resumed, &pool);
  for (const auto& [ticket, times] : pool.finished_) EXPECT_EQ(times, 1) << ticket;
}

}  // namespace
}  // namespace kernelarc

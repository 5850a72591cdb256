// The orchestrator with several evaluations in flight, on a stand-in pool that finishes them in
// a seeded order: the run must not depend on that order, must store each evaluation exactly
// once, must resume losing nothing, and with one in flight must be the evaluator-alone run.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>
#include <vector>

#include "core/test_support.h"
#include "optimize/search_setup.h"
#include "orchestrator_test_support.h"

namespace kernelarc {
namespace {

using testing::kProblem;
using testing::LandscapeEvaluator;
using testing::Proposed;
using testing::ReorderingPool;
using testing::run_orchestrator;
using testing::sequence;
using testing::SilentProgress;
using testing::TempDir;

class EvaluationPoolTest : public ::testing::Test {
 protected:
  EvaluationPoolTest() : setup_(kProblem, SearchSetupOptions{}) {}

  /// Through `pool` when given, else through the evaluator alone.
  OptimizeSummary optimize(Workspace& workspace, const OptimizeOptions& options,
                           LandscapeEvaluator& evaluator, EvaluationPool* pool,
                           std::optional<int64_t> resume = {}) {
    return run_orchestrator(setup_.target(setup_.problem().workloads), evaluator, pool, workspace,
                            options, progress_, resume);
  }

  SearchSetup setup_;
  SilentProgress progress_;
};

TEST_F(EvaluationPoolTest, SeveralInFlightFinishInAnyOrderAndTheRunIsTheSame) {
  OptimizeOptions options;
  options.budget = 40;
  options.in_flight = 3;
  std::vector<std::vector<Proposed>> runs;
  for (const uint64_t order_seed : {0, 1, 2}) {
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    ReorderingPool pool(evaluator, 3, order_seed);
    const auto summary = optimize(workspace, options, evaluator, &pool);
    runs.push_back(sequence(workspace.database(), summary.run_id));
    EXPECT_EQ(summary.evaluated, 40);
    EXPECT_EQ(pool.max_in_flight_, 3u);
    if (order_seed != 0) {
      EXPECT_GT(pool.out_of_order_, 5) << order_seed;
    }
    // Each candidate finished once and was stored once; the baseline and the finalists went to
    // the evaluator alone.
    EXPECT_EQ(pool.finished_.size(), 40u);
    for (const auto& [ticket, times] : pool.finished_) EXPECT_EQ(times, 1) << ticket;
    EXPECT_EQ(evaluator.calls_, 1 + 40 + 4 * 3);
    EXPECT_EQ(evaluator.final_calls_, 4 * 3);
    EXPECT_EQ(workspace.database().budget_of(summary.run_id).used, 41);
    EXPECT_TRUE(workspace.database().unevaluated_candidates(summary.run_id).empty());
    ASSERT_TRUE(summary.speedup);
    EXPECT_GT(summary.speedup->low, 3);
  }
  ASSERT_EQ(runs[0].size(), 41u);
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

TEST_F(EvaluationPoolTest, OneInFlightIsTheRunOfTheEvaluatorAlone) {
  OptimizeOptions options;
  options.budget = 30;
  options.build_ahead = 1;
  std::vector<std::vector<Proposed>> runs;
  std::vector<std::string> winners;
  for (const bool through_pool : {false, true}) {
    TempDir dir;
    Workspace workspace(dir.path());
    LandscapeEvaluator evaluator(setup_.problem());
    ReorderingPool pool(evaluator, 1, 0);
    const auto summary = optimize(workspace, options, evaluator, through_pool ? &pool : nullptr);
    runs.push_back(sequence(workspace.database(), summary.run_id));
    ASSERT_FALSE(summary.finalists.empty());
    winners.push_back(summary.finalists.front().label);
    EXPECT_EQ(evaluator.calls_, 1 + 30 + 4 * 3);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(winners[0], winners[1]);
}

// Killed with evaluations in flight, some finished out of order: what finished is stored, and a
// resume on a pool of another size measures only the rest and ends as the straight run.
TEST_F(EvaluationPoolTest, AnInterruptedRunResumesOnAnotherPoolLosingNothing) {
  OptimizeOptions options;
  options.budget = 36;
  options.in_flight = 3;
  TempDir straight_dir;
  Workspace straight(straight_dir.path());
  LandscapeEvaluator straight_evaluator(setup_.problem());
  ReorderingPool straight_pool(straight_evaluator, 3, 1);
  const auto straight_summary = optimize(straight, options, straight_evaluator, &straight_pool);

  TempDir dir;
  int64_t run_id = 0;
  {
    Workspace workspace(dir.path());
    LandscapeEvaluator crashing(setup_.problem());
    crashing.crash_after_ = 17;
    ReorderingPool pool(crashing, 3, 2);
    EXPECT_THROW(optimize(workspace, options, crashing, &pool), std::runtime_error);
    EXPECT_GT(pool.out_of_order_, 0);
    run_id = workspace.database().list_runs().back().id;
    EXPECT_EQ(workspace.database().budget_of(run_id).used, 17);
    // Proposals beyond the last finished evaluation were stored too.
    EXPECT_FALSE(workspace.database().unevaluated_candidates(run_id).empty());
  }
  Workspace workspace(dir.path());
  LandscapeEvaluator resumed(setup_.problem());
  ReorderingPool pool(resumed, 2, 3);
  OptimizeOptions ignored;  // a resume takes the stored options, in_flight among them
  const auto summary = optimize(workspace, ignored, resumed, &pool, run_id);
  EXPECT_EQ(summary.evaluated, 36);
  EXPECT_EQ(resumed.calls_, (37 - 17) + 4 * 3);
  for (const auto& [ticket, times] : pool.finished_) EXPECT_EQ(times, 1) << ticket;
  EXPECT_EQ(sequence(workspace.database(), run_id),
            sequence(straight.database(), straight_summary.run_id));
  EXPECT_TRUE(workspace.database().unevaluated_candidates(run_id).empty());
  ASSERT_FALSE(summary.finalists.empty());
  EXPECT_EQ(summary.finalists.front().label, straight_summary.finalists.front().label);
}

}  // namespace
}  // namespace kernelarc

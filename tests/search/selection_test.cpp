#include <gtest/gtest.h>

#include <set>

#include "../core/test_support.h"
#include "search/selection.h"
#include "search_test_support.h"

namespace kernelarc {
namespace {

using testing::input_error_of;
using testing::run_policy;
using testing::SearchProblem;

class EveryPolicy : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Search, EveryPolicy,
                         ::testing::Values("random", "beam", "mcts", "islands"));

TEST_P(EveryPolicy, ProposesOnlyValidNewPoints) {
  const SearchProblem problem;
  const testing::PolicyRun run = run_policy(problem, GetParam(), 7, 200);
  ASSERT_EQ(run.proposals.size(), 200u);
  EXPECT_EQ(std::set<std::string>(run.proposals.begin(), run.proposals.end()).size(), 200u);
  for (const SearchNode& node : run.tree.nodes()) {
    EXPECT_TRUE(problem.space(node.template_name).is_valid(node.point))
        << node.template_name << " " << format_knob_point(node.point);
    if (node.parent) {
      EXPECT_EQ(run.tree.node(*node.parent).template_name, node.template_name);
    }
  }
}

TEST_P(EveryPolicy, SameSeedSameProposals) {
  const SearchProblem problem;
  const testing::PolicyRun first = run_policy(problem, GetParam(), 11, 120);
  const testing::PolicyRun second = run_policy(problem, GetParam(), 11, 120);
  EXPECT_EQ(first.proposals, second.proposals);
  const testing::PolicyRun other_seed = run_policy(problem, GetParam(), 12, 120);
  EXPECT_NE(first.proposals, other_seed.proposals);
}

TEST_P(EveryPolicy, CoversTheWholeSpaceThenStops) {
  const SearchProblem problem;
  const testing::PolicyRun run = run_policy(problem, GetParam(), 3, SearchProblem::kPoints + 10);
  EXPECT_TRUE(run.exhausted);
  EXPECT_EQ(run.proposals.size(), SearchProblem::kPoints);
  EXPECT_TRUE(run.optimum_at.has_value());
}

TEST(SearchPolicies, GuidedPoliciesReachTheOptimumEarly) {
  // Deterministic for the seed: each run either always or never reaches the optimum in time.
  const SearchProblem problem;
  for (const std::string name : {"beam", "mcts", "islands"}) {
    const testing::PolicyRun run = run_policy(problem, name, 2026, 150);
    EXPECT_TRUE(run.optimum_at.has_value()) << name;
  }
  // Random search reaches it too, given a larger budget.
  const testing::PolicyRun random = run_policy(problem, "random", 2026, 450);
  EXPECT_TRUE(random.optimum_at.has_value());
}

TEST(SearchPolicies, UnknownNameListsTheKnownOnes) {
  const SearchProblem problem;
  EXPECT_EQ(input_error_of([&] { make_policy("annealing", problem.options()); }),
            "search policy: unknown policy \"annealing\" (expected one of random, beam, mcts, "
            "islands)");
  PolicyOptions bad = problem.options();
  bad.beam_width = 0;
  EXPECT_EQ(input_error_of([&] { make_policy("beam", bad); }),
            "search policy: beam_width: expected at least 1, got 0");
}

// A node recorded outside the policy, on island `id % islands` (or its parent's island).
int add_measured(SearchTree& tree, const std::string& bm_bn_layout_unroll, double fitness,
                 FeatureCell features, std::optional<int> parent = std::nullopt) {
  Proposal proposal;
  proposal.parent = parent;
  proposal.template_name = "tile";
  proposal.point = parse_knob_point(bm_bn_layout_unroll);
  const int id = tree.add(std::move(proposal));
  tree.record(id, {.passed = true, .fitness = fitness, .features = std::move(features)});
  return id;
}

TEST(SearchIslands, ArchiveKeepsTheBestPerCell) {
  const SearchProblem problem;
  PolicyOptions options = problem.options();
  options.islands = 1;
  IslandsPolicy policy(options);
  SearchTree tree;
  const int a = add_measured(tree, "BM=8,BN=8,LAYOUT=row,UNROLL=1", 3, {{"layout", 0}});
  policy.observe(tree, a);
  const int b = add_measured(tree, "BM=16,BN=8,LAYOUT=row,UNROLL=1", 5, {{"layout", 0}});
  policy.observe(tree, b);
  const int c = add_measured(tree, "BM=32,BN=8,LAYOUT=row,UNROLL=1", 4, {{"layout", 0}});
  policy.observe(tree, c);
  const int d = add_measured(tree, "BM=8,BN=8,LAYOUT=col,UNROLL=1", 1, {{"layout", 1}});
  policy.observe(tree, d);
  const int failed = tree.add(
      {.template_name = "tile", .point = parse_knob_point("BM=8,BN=16,LAYOUT=col,UNROLL=1")});
  tree.record(failed, {.passed = false, .features = {{"layout", 1}}});
  policy.observe(tree, failed);

  const std::map<FeatureCell, int> expected = {{{{"layout", 0}}, b}, {{{"layout", 1}}, d}};
  EXPECT_EQ(policy.archive(0), expected);
}

TEST(SearchIslands, MigrationMovesEachIslandsBestToTheNext) {
  const SearchProblem problem;
  PolicyOptions options = problem.options();
  options.islands = 3;
  options.migration_interval = 2;
  IslandsPolicy policy(options);
  SearchTree tree;
  // Ids 0..5 land on islands 0, 1, 2, 0, 1, 2.
  const std::vector<double> fitness = {2, 1, 3, 6, 0.5, 1};
  for (std::size_t i = 0; i < fitness.size(); ++i) {
    const std::string point = "BM=" + std::to_string(8 << i) + ",BN=8,LAYOUT=row,UNROLL=1";
    policy.observe(tree, add_measured(tree, point, fitness[i], {{"bucket", int64_t(i)}}));
  }
  EXPECT_EQ(policy.island_of(3), 0);
  EXPECT_EQ(policy.archive(1).size(), 2u);

  Rng rng(5);
  policy.propose(tree, rng);
  EXPECT_EQ(policy.archive(1).size(), 2u) << "no migration before the interval";
  policy.propose(tree, rng);
  // Island 0's best (node 3) now sits on island 1, island 1's (node 1) on island 2, island 2's
  // (node 2) on island 0; nothing left its island.
  EXPECT_EQ(policy.archive(1).at({{"bucket", 3}}), 3);
  EXPECT_EQ(policy.archive(2).at({{"bucket", 1}}), 1);
  EXPECT_EQ(policy.archive(0).at({{"bucket", 2}}), 2);
  EXPECT_EQ(policy.archive(0).size(), 3u);
  EXPECT_EQ(policy.archive(1).size(), 3u);
  EXPECT_EQ(policy.archive(2).size(), 3u);
}

TEST(SearchIslands, ChildrenOfForeignNodesJoinTheirParentsIsland) {
  const SearchProblem problem;
  PolicyOptions options = problem.options();
  options.islands = 2;
  IslandsPolicy policy(options);
  SearchTree tree;
  const int root = add_measured(tree, "BM=8,BN=8,LAYOUT=row,UNROLL=1", 1, {});
  policy.observe(tree, root);
  const int child = add_measured(tree, "BM=16,BN=8,LAYOUT=row,UNROLL=1", 2, {}, root);
  policy.observe(tree, child);
  EXPECT_EQ(policy.island_of(child), 0);
  EXPECT_EQ(policy.archive(0).at({}), child);
  EXPECT_TRUE(policy.archive(1).empty());
}

TEST(SearchMcts, PriorsSteerTheDescent) {
  // Two equally good roots that each have children: PUCT expands under the one with the prior.
  const SearchProblem problem;
  PolicyOptions options = problem.options();
  options.operator_options.weights = {.inherit = 1, .siblings = 0, .crossover = 0, .restart = 0};
  options.widening = 0.5;
  std::unique_ptr<SelectionPolicy> policy = make_policy("mcts", options);
  SearchTree tree;
  for (const auto& [point, prior] : {std::pair{"BM=8,BN=8,LAYOUT=row,UNROLL=1", 0.05},
                                     std::pair{"BM=8,BN=16,LAYOUT=row,UNROLL=1", 0.95}}) {
    const int id =
        tree.add({.template_name = "tile", .point = parse_knob_point(point), .prior = prior});
    tree.record(id, {.passed = true, .fitness = 1});
    policy->observe(tree, id);
  }
  Rng rng(1);
  const std::optional<Proposal> proposal = policy->propose(tree, rng);
  ASSERT_TRUE(proposal.has_value());
  EXPECT_EQ(proposal->parent, 1);
  EXPECT_EQ(proposal->operation, Operation::Inherit);
}

}  // namespace
}  // namespace kernelarc

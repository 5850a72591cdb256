// Every guided policy deepens: while children keep improving on their parents, the improving
// child is expanded next, so chains root -> child -> grandchild -> ... arise instead of a flat
// tree. (Random search is the unguided control and does not.)
#include <gtest/gtest.h>

#include "search/deepening.h"
#include "search_test_support.h"

namespace kernelarc {
namespace {

using testing::SearchProblem;

int depth_of(const SearchTree& tree, int id) {
  int depth = 0;
  for (auto parent = tree.node(id).parent; parent; parent = tree.node(*parent).parent) ++depth;
  return depth;
}

class Deepening : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Search, Deepening, ::testing::Values("beam", "mcts", "islands"));

TEST_P(Deepening, ImprovingChildrenGrowAChain) {
  const SearchProblem problem;
  std::unique_ptr<SelectionPolicy> policy = make_policy(GetParam(), problem.options());
  SearchTree tree;
  Rng rng(5);
  int deepest = 0;
  for (int step = 0; step < 8; ++step) {
    std::optional<Proposal> proposal = policy->propose(tree, rng);
    ASSERT_TRUE(proposal);
    const std::optional<int> parent = proposal->parent;
    const int id = tree.add(*proposal);
    // Every child is better than its parent; a root starts at 1.
    const double fitness = parent ? *tree.node(*parent).fitness + 1 : 1.0;
    tree.record(id, {.passed = true, .fitness = fitness});
    policy->observe(tree, id);
    deepest = std::max(deepest, depth_of(tree, id));
  }
  EXPECT_GE(deepest, 3) << GetParam();
}

TEST(Deepening, ImprovedOnParentComparesWithTheParentOrTheTree) {
  SearchTree tree;
  const int root = testing::add_passed(tree, "BM=8,BN=8,LAYOUT=row,UNROLL=1", 1);
  EXPECT_TRUE(improved_on_parent(tree, root));  // the best of the tree
  const int worse_root = testing::add_passed(tree, "BM=8,BN=16,LAYOUT=row,UNROLL=1", 0.5);
  EXPECT_FALSE(improved_on_parent(tree, worse_root));
  const int better = testing::add_passed(tree, "BM=16,BN=8,LAYOUT=row,UNROLL=1", 2, root);
  EXPECT_TRUE(improved_on_parent(tree, better));
  const int same = testing::add_passed(tree, "BM=16,BN=16,LAYOUT=row,UNROLL=1", 2, better);
  EXPECT_FALSE(improved_on_parent(tree, same));
  const int failed = tree.add({.parent = root,
                               .template_name = "tile",
                               .point = parse_knob_point("BM=32,BN=8,LAYOUT=row,UNROLL=1")});
  tree.record(failed, {.passed = false});
  EXPECT_FALSE(improved_on_parent(tree, failed));
}

}  // namespace
}  // namespace kernelarc

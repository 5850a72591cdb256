#include <gtest/gtest.h>

#include "../core/test_support.h"
#include "search/search_tree.h"

namespace kernelarc {
namespace {

using testing::input_error_of;

Proposal proposal(const std::string& point, std::optional<int> parent = std::nullopt) {
  return {.parent = parent, .template_name = "t", .point = parse_knob_point(point)};
}

TEST(SearchTree, RecordsResultsAndBacksThemUp) {
  SearchTree tree;
  const int root = tree.add(proposal("a=1"));
  const int child = tree.add(proposal("a=2", root));
  const int grandchild = tree.add(proposal("a=3", child));
  const int sibling = tree.add(proposal("a=4", root));
  tree.record(root, {.passed = true, .fitness = 1});
  tree.record(grandchild, {.passed = true, .fitness = 3, .noise = 0.01, .features = {{"f", 2}}});
  tree.record(sibling, {.passed = false});

  EXPECT_EQ(tree.node(root).visits, 3);
  EXPECT_EQ(tree.node(root).passed_in_subtree, 2);
  EXPECT_DOUBLE_EQ(tree.node(root).fitness_sum, 4);
  EXPECT_EQ(tree.node(child).visits, 1);
  EXPECT_EQ(tree.node(child).status, CandidateStatus::Pending);
  EXPECT_EQ(tree.node(grandchild).features, (FeatureCell{{"f", 2}}));
  EXPECT_EQ(tree.node(sibling).status, CandidateStatus::Failed);
  EXPECT_EQ(tree.children(root), (std::vector<int>{child, sibling}));
  EXPECT_EQ(tree.siblings(child), std::vector<int>{sibling});
  EXPECT_EQ(tree.recorded(), (std::vector<int>{root, grandchild, sibling}));
  EXPECT_EQ(tree.best(), grandchild);
  EXPECT_EQ(tree.best("other"), std::nullopt);
  EXPECT_EQ(tree.ranked(), (std::vector<int>{grandchild, root}));
  EXPECT_EQ(tree.fitness_range(), std::pair(1.0, 3.0));
  EXPECT_TRUE(tree.contains("t", parse_knob_point("a=4")));
  EXPECT_FALSE(tree.contains("u", parse_knob_point("a=4")));
}

TEST(SearchTree, RejectsDuplicatesAndBadRecords) {
  SearchTree tree;
  const int id = tree.add(proposal("a=1"));
  EXPECT_EQ(input_error_of([&] { tree.add(proposal("a=1")); }),
            "search tree: template 't' point \"a=1\" is already in the tree");
  EXPECT_EQ(input_error_of([&] { tree.add(proposal("a=2", 5)); }),
            "search tree: parent: no node 5 (the tree has 1)");
  EXPECT_EQ(input_error_of([&] { tree.record(id, {.passed = true}); }),
            "search tree: record node 0: a passed result needs a fitness");
  tree.record(id, {.passed = false});
  EXPECT_EQ(input_error_of([&] { tree.record(id, {.passed = false}); }),
            "search tree: record node 0: already failed");
}

}  // namespace
}  // namespace kernelarc

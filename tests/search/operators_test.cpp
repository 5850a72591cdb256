#include <gtest/gtest.h>

#include <set>

#include "../core/test_support.h"
#include "search/operators.h"
#include "search_test_support.h"

namespace kernelarc {
namespace {

using testing::input_error_of;
using testing::SearchProblem;
using testing::add_passed;

UniversalOperator make_operator(const SearchProblem& problem) {
  return UniversalOperator({"tile", "other"}, problem.lookup());
}

TEST(SearchOperator, RestartWithoutParent) {
  const SearchProblem problem;
  const UniversalOperator op = make_operator(problem);
  SearchTree tree;
  Rng rng(1);
  const std::optional<Proposal> proposal = op.propose(tree, std::nullopt, rng);
  ASSERT_TRUE(proposal.has_value());
  EXPECT_EQ(proposal->operation, Operation::Restart);
  EXPECT_FALSE(proposal->parent.has_value());
  EXPECT_EQ(proposal->agent, "synth");
  EXPECT_TRUE(problem.space(proposal->template_name).is_valid(proposal->point));
}

TEST(SearchOperator, InheritChangesOneKnobUntilNoneIsLeft) {
  const SearchProblem problem;
  const UniversalOperator op = make_operator(problem);
  SearchTree tree;
  const int parent = add_passed(tree, "BM=64,BN=64,LAYOUT=row,UNROLL=2", 5);
  const KnobPoint parent_point = tree.node(parent).point;
  Rng rng(2);
  int children = 0;
  while (std::optional<Proposal> child = op.apply(Operation::Inherit, tree, parent, rng)) {
    EXPECT_EQ(child->parent, parent);
    EXPECT_EQ(child->template_name, "tile");
    EXPECT_TRUE(problem.tile.is_valid(child->point));
    int changed = 0;
    for (const auto& [name, value] : child->point) changed += value != parent_point.at(name);
    EXPECT_EQ(changed, 1) << format_knob_point(child->point);
    tree.add(std::move(*child));
    ++children;
  }
  // At most the 19 one-knob changes (7 other values of BM and of BN, 2 layouts, 3 unrolls), and
  // at least every one-step neighbour, the last resort before giving up.
  EXPECT_LE(children, 19);
  for (const KnobPoint& neighbour : problem.tile.neighbours(parent_point)) {
    EXPECT_TRUE(tree.contains("tile", neighbour)) << format_knob_point(neighbour);
  }
}

TEST(SearchOperator, LearnsOneKnobFromTheBestSibling) {
  const SearchProblem problem;
  const UniversalOperator op = make_operator(problem);
  SearchTree tree;
  const int root = add_passed(tree, "BM=8,BN=8,LAYOUT=row,UNROLL=1", 1);
  const int parent = add_passed(tree, "BM=16,BN=8,LAYOUT=row,UNROLL=1", 2, root);
  add_passed(tree, "BM=8,BN=8,LAYOUT=col,UNROLL=1", 3, root);
  const int best = add_passed(tree, "BM=16,BN=32,LAYOUT=tiled,UNROLL=1", 4, root);
  Rng rng(3);
  const std::optional<Proposal> child = op.apply(Operation::LearnFromSiblings, tree, parent, rng);
  ASSERT_TRUE(child.has_value());
  EXPECT_EQ(child->inspired_by, std::vector<int>{best});
  const std::set<std::string> expected = {"BM=16,BN=32,LAYOUT=row,UNROLL=1",
                                          "BM=16,BN=8,LAYOUT=tiled,UNROLL=1"};
  EXPECT_TRUE(expected.contains(format_knob_point(child->point)))
      << format_knob_point(child->point);
}

TEST(SearchOperator, CrossoverTakesEachKnobFromOneParent) {
  const SearchProblem problem;
  const UniversalOperator op = make_operator(problem);
  SearchTree tree;
  const int parent = add_passed(tree, "BM=8,BN=8,LAYOUT=row,UNROLL=1", 1);
  const int partner = add_passed(tree, "BM=64,BN=128,LAYOUT=tiled,UNROLL=3", 2);
  Rng rng(4);
  for (int i = 0; i < 10; ++i) {
    std::optional<Proposal> child = op.apply(Operation::Crossover, tree, parent, rng, partner);
    ASSERT_TRUE(child.has_value());
    EXPECT_EQ(child->inspired_by, std::vector<int>{partner});
    for (const auto& [name, value] : child->point) {
      EXPECT_TRUE(value == tree.node(parent).point.at(name) ||
                  value == tree.node(partner).point.at(name))
          << name;
    }
    tree.add(std::move(*child));
  }
}

TEST(SearchOperator, NeverProposesFailedPointsAndStopsWhenExhausted) {
  // 3 valid points, one of which failed before.
  ConstrainedSpace tiny(KnobSpace({Knob::int_range("A", 1, 2), Knob::boolean("B")}, {"A + B <= 2"}),
                        {});
  tiny.mark_failed(parse_knob_point("A=2,B=0"));
  const UniversalOperator op(
      {"tiny"}, [&](const std::string& name) { return name == "tiny" ? &tiny : nullptr; });
  SearchTree tree;
  Rng rng(5);
  std::set<std::string> seen;
  std::optional<int> last;
  while (std::optional<Proposal> proposal = op.propose(tree, last, rng)) {
    seen.insert(format_knob_point(proposal->point));
    last = tree.add(std::move(*proposal));
    tree.record(*last, {.passed = true, .fitness = 1});
  }
  EXPECT_EQ(seen, (std::set<std::string>{"A=1,B=0", "A=1,B=1"}));
}

TEST(SearchOperator, RejectsBadInput) {
  const SearchProblem problem;
  EXPECT_EQ(input_error_of([&] {
              UniversalOperator({"tile", "gemm"}, problem.lookup());
            }),
            "search operator: template 'gemm' has no knob space");
  EXPECT_EQ(input_error_of([&] { UniversalOperator({}, problem.lookup()); }),
            "search operator: templates: expected at least one");
  const UniversalOperator op = make_operator(problem);
  SearchTree tree;
  Rng rng(6);
  EXPECT_EQ(input_error_of([&] { op.apply(Operation::Crossover, tree, std::nullopt, rng); }),
            "search operator: 'crossover' needs a parent");
}

}  // namespace
}  // namespace kernelarc

// OperatorOptions::mutable_knobs: the moves from a parent change only the knobs it admits, and an
// empty filter (or one admitting every knob) leaves the proposals and the draws as they were.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "search/operators.h"
#include "search_test_support.h"

namespace kernelarc {
namespace {

using testing::SearchProblem;
using testing::add_passed;

KnobFilter named(std::set<std::string> names) {
  return [names = std::move(names)](const Knob& knob) { return names.contains(knob.name()); };
}

UniversalOperator make_operator(const SearchProblem& problem, KnobFilter filter) {
  OperatorOptions options;
  options.mutable_knobs = std::move(filter);
  return UniversalOperator({"tile", "other"}, problem.lookup(), options);
}

std::set<std::string> changed_knobs(const KnobPoint& from, const KnobPoint& to) {
  std::set<std::string> names;
  for (const auto& [name, value] : to) {
    if (from.at(name) != value) names.insert(name);
  }
  return names;
}

// Proposes from a random node (or none) `steps` times, measuring each proposal; returns one line
// per proposal and calls `check` on each with the node it was proposed from.
std::vector<std::string> run_operator(
    const UniversalOperator& op, uint64_t seed, int steps,
    const std::function<void(const Proposal&, const SearchTree&)>& check = {}) {
  SearchTree tree;
  Rng rng(seed);
  std::vector<std::string> lines;
  for (int step = 0; step < steps; ++step) {
    const uint64_t pick = rng.below(tree.size() + 1);
    const std::optional<int> parent =
        pick < tree.size() ? std::optional<int>(static_cast<int>(pick)) : std::nullopt;
    std::optional<Proposal> proposal = op.propose(tree, parent, rng);
    if (!proposal) break;
    if (check) check(*proposal, tree);
    std::string line = std::string(operation_name(proposal->operation)) + " " +
                       proposal->template_name + " " + format_knob_point(proposal->point) +
                       " parent=" + (proposal->parent ? std::to_string(*proposal->parent) : "-");
    for (const int id : proposal->inspired_by) line += " from=" + std::to_string(id);
    lines.push_back(line);
    const CandidateResult result = SearchProblem::measure(proposal->template_name, proposal->point);
    tree.record(tree.add(std::move(*proposal)), result);
  }
  return lines;
}

TEST(SearchOperatorFilter, InheritChangesOnlyAdmittedKnobs) {
  const SearchProblem problem;
  const KnobFilter filter = named({"BM", "LAYOUT"});
  const UniversalOperator op = make_operator(problem, filter);
  SearchTree tree;
  const int parent = add_passed(tree, "BM=64,BN=64,LAYOUT=row,UNROLL=2", 5);
  const KnobPoint parent_point = tree.node(parent).point;
  Rng rng(2);
  int children = 0;
  while (std::optional<Proposal> child = op.apply(Operation::Inherit, tree, parent, rng)) {
    const std::set<std::string> changed = changed_knobs(parent_point, child->point);
    ASSERT_EQ(changed.size(), 1u) << format_knob_point(child->point);
    EXPECT_TRUE(changed.contains("BM") || changed.contains("LAYOUT"))
        << format_knob_point(child->point);
    tree.add(std::move(*child));
    ++children;
  }
  // At most the 7 other values of BM and 2 other layouts; every admitted one-step neighbour (the
  // last resort) was proposed.
  EXPECT_LE(children, 9);
  const std::vector<KnobPoint> near = problem.tile.neighbours(parent_point, filter);
  EXPECT_EQ(near.size(), 4u);
  for (const KnobPoint& neighbour : near) EXPECT_TRUE(tree.contains("tile", neighbour));
}

TEST(SearchOperatorFilter, SiblingsLendOnlyAdmittedKnobs) {
  const SearchProblem problem;
  SearchTree tree;
  const int root = add_passed(tree, "BM=8,BN=8,LAYOUT=row,UNROLL=1", 1);
  const int parent = add_passed(tree, "BM=16,BN=8,LAYOUT=row,UNROLL=1", 2, root);
  const int best = add_passed(tree, "BM=16,BN=32,LAYOUT=tiled,UNROLL=1", 4, root);
  const UniversalOperator layout_only = make_operator(problem, named({"LAYOUT"}));
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    const std::optional<Proposal> child =
        layout_only.apply(Operation::LearnFromSiblings, tree, parent, rng);
    ASSERT_TRUE(child.has_value());
    EXPECT_EQ(format_knob_point(child->point), "BM=16,BN=8,LAYOUT=tiled,UNROLL=1");
    EXPECT_EQ(child->inspired_by, std::vector<int>{best});
  }
  // The best sibling differs from the parent in no knob the filter admits.
  const UniversalOperator same_there = make_operator(problem, named({"UNROLL", "BM"}));
  Rng rng(3);
  EXPECT_FALSE(same_there.apply(Operation::LearnFromSiblings, tree, parent, rng));
}

TEST(SearchOperatorFilter, CrossoverTakesOnlyAdmittedKnobsFromThePartner) {
  const SearchProblem problem;
  const UniversalOperator op = make_operator(problem, named({"BM", "UNROLL"}));
  SearchTree tree;
  const int parent = add_passed(tree, "BM=8,BN=8,LAYOUT=row,UNROLL=1", 1);
  const int partner = add_passed(tree, "BM=64,BN=128,LAYOUT=tiled,UNROLL=3", 2);
  Rng rng(4);
  std::set<std::string> children;
  while (std::optional<Proposal> child =
             op.apply(Operation::Crossover, tree, parent, rng, partner)) {
    EXPECT_EQ(child->inspired_by, std::vector<int>{partner});
    children.insert(format_knob_point(child->point));
    tree.add(std::move(*child));
  }
  EXPECT_EQ(children, (std::set<std::string>{"BM=64,BN=8,LAYOUT=row,UNROLL=1",
                                             "BM=8,BN=8,LAYOUT=row,UNROLL=3",
                                             "BM=64,BN=8,LAYOUT=row,UNROLL=3"}));
}

TEST(SearchOperatorFilter, ChildrenNeverChangeADisallowedKnob) {
  const SearchProblem problem;
  const UniversalOperator op = make_operator(problem, named({"BN", "UNROLL", "FAST"}));
  std::map<Operation, int> moves;
  const std::vector<std::string> lines =
      run_operator(op, 9, 300, [&](const Proposal& proposal, const SearchTree& tree) {
        ++moves[proposal.operation];
        if (proposal.operation == Operation::Restart) return;
        ASSERT_TRUE(proposal.parent.has_value());
        const KnobPoint& from = tree.node(*proposal.parent).point;
        for (const std::string& name : changed_knobs(from, proposal.point)) {
          EXPECT_TRUE(name == "BN" || name == "UNROLL" || name == "FAST")
              << operation_name(proposal.operation) << " changed " << name;
        }
      });
  EXPECT_EQ(lines.size(), 300u);
  // Every move was exercised, so the check above covered each of them.
  for (const Operation operation : {Operation::Inherit, Operation::LearnFromSiblings,
                                    Operation::Crossover, Operation::Restart}) {
    EXPECT_GT(moves[operation], 0) << operation_name(operation);
  }
}

TEST(SearchOperatorFilter, EmptyOrAdmitAllFilterProposesAsWithout) {
  const SearchProblem problem;
  const UniversalOperator plain({"tile", "other"}, problem.lookup());
  const std::vector<std::string> expected = run_operator(plain, 17, 250);
  ASSERT_EQ(expected.size(), 250u);
  EXPECT_EQ(run_operator(make_operator(problem, KnobFilter{}), 17, 250), expected);
  EXPECT_EQ(run_operator(make_operator(problem, [](const Knob&) { return true; }), 17, 250),
            expected);
  // A real filter does change the walk.
  EXPECT_NE(run_operator(make_operator(problem, named({"BM"})), 17, 250), expected);
}

}  // namespace
}  // namespace kernelarc

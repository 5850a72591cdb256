// Directed steps: the parent's point with one named knob moved one place along its domain or
// set to a value, valid, new to the tree and admitted by the operator's knob filter.
#include <gtest/gtest.h>

#include <set>

#include "search/operators.h"
#include "search_test_support.h"

namespace kernelarc {
namespace {

using testing::add_passed;
using testing::SearchProblem;

KnobStep raise(std::string knob) {
  return {std::move(knob), 1, std::nullopt};
}
KnobStep lower(std::string knob) {
  return {std::move(knob), -1, std::nullopt};
}
KnobStep set(std::string knob, KnobValue value) {
  return {std::move(knob), 1, std::move(value)};
}

class OperatorStep : public ::testing::Test {
 protected:
  std::optional<SteppedProposal> step(const std::vector<KnobStep>& steps, uint64_t seed = 1) {
    Rng rng(seed);
    return op_.step(tree_, parent_, steps, rng);
  }
  std::string stepped_point(const std::vector<KnobStep>& steps) {
    const auto stepped = step(steps);
    return stepped ? format_knob_point(stepped->proposal.point) : "none";
  }

  SearchProblem problem_;
  UniversalOperator op_{{"tile", "other"}, problem_.lookup()};
  SearchTree tree_;
  int parent_ = add_passed(tree_, "BM=256,BN=256,LAYOUT=row,UNROLL=2", 5);
};

TEST_F(OperatorStep, MovesOneKnobOnePlaceOrToItsValue) {
  const auto stepped = step({lower("BM")});
  ASSERT_TRUE(stepped);
  EXPECT_EQ(format_knob_point(stepped->proposal.point), "BM=128,BN=256,LAYOUT=row,UNROLL=2");
  EXPECT_EQ(stepped->proposal.operation, Operation::Diagnosis);
  EXPECT_EQ(stepped->proposal.parent, parent_);
  EXPECT_EQ(stepped->proposal.template_name, "tile");
  EXPECT_EQ(stepped->step, 0u);
  EXPECT_EQ(stepped_point({lower("UNROLL")}), "BM=256,BN=256,LAYOUT=row,UNROLL=1");
  EXPECT_EQ(stepped_point({set("LAYOUT", "tiled")}), "BM=256,BN=256,LAYOUT=tiled,UNROLL=2");
  EXPECT_EQ(stepped_point({set("UNROLL", int64_t{4})}), "BM=256,BN=256,LAYOUT=row,UNROLL=4");
}

TEST_F(OperatorStep, RefusesAStepThatBreaksAConstraintLeavesTheDomainOrIsKnown) {
  // BN=512 breaks BM * BN <= 65536.
  EXPECT_EQ(stepped_point({raise("BN")}), "none");
  EXPECT_EQ(stepped_point({raise("BM")}), "none");
  const int top = add_passed(tree_, "BM=8,BN=1024,LAYOUT=row,UNROLL=4", 1);
  Rng rng(1);
  EXPECT_FALSE(op_.step(tree_, top, {raise("UNROLL")}, rng));            // past the end of 1..4
  EXPECT_FALSE(op_.step(tree_, top, {lower("BM")}, rng));                // below the smallest power
  EXPECT_FALSE(op_.step(tree_, top, {set("UNROLL", int64_t{4})}, rng));  // where it is
  EXPECT_EQ(stepped_point({set("UNROLL", int64_t{9})}), "none");         // outside 1..4
  EXPECT_EQ(stepped_point({set("UNROLL", "fast")}), "none");             // wrong type
  EXPECT_EQ(stepped_point({raise("LAYOUT")}), "none");                   // an enum has no up
  EXPECT_EQ(stepped_point({raise("VEC")}), "none");  // not a knob of the template
  add_passed(tree_, "BM=128,BN=256,LAYOUT=row,UNROLL=2", 4, parent_);
  EXPECT_EQ(stepped_point({lower("BM")}), "none");  // already in the tree
}

TEST_F(OperatorStep, TakesTheFirstStepThatWorksInARandomOrder) {
  const auto stepped = step({raise("BN"), raise("VEC"), lower("BM")});
  ASSERT_TRUE(stepped);
  EXPECT_EQ(stepped->step, 2u);
  EXPECT_EQ(format_knob_point(stepped->proposal.point), "BM=128,BN=256,LAYOUT=row,UNROLL=2");

  // With several usable steps, the seed decides; the same seed, the same one.
  const std::vector<KnobStep> steps{lower("BM"), lower("BN"), raise("UNROLL"), lower("UNROLL")};
  std::set<std::size_t> taken;
  for (uint64_t seed = 1; seed <= 32; ++seed) {
    const auto first = step(steps, seed);
    const auto again = step(steps, seed);
    ASSERT_TRUE(first && again);
    EXPECT_EQ(first->step, again->step);
    EXPECT_EQ(first->proposal.point, again->proposal.point);
    taken.insert(first->step);
  }
  EXPECT_EQ(taken.size(), steps.size());
}

TEST_F(OperatorStep, OnlyKnobsTheFilterAdmits) {
  OperatorOptions options;
  options.mutable_knobs = [](const Knob& knob) { return knob.name() == "UNROLL"; };
  const UniversalOperator unroll_only({"tile"}, problem_.lookup(), options);
  Rng rng(3);
  EXPECT_FALSE(unroll_only.step(tree_, parent_, {lower("BM"), lower("BN")}, rng));
  const auto stepped = unroll_only.step(tree_, parent_, {lower("BM"), raise("UNROLL")}, rng);
  ASSERT_TRUE(stepped);
  EXPECT_EQ(stepped->step, 1u);
}

TEST_F(OperatorStep, ApplyRefusesADiagnosisMoveWithoutSteps) {
  Rng rng(1);
  EXPECT_THROW(op_.apply(Operation::Diagnosis, tree_, parent_, rng), InputError);
  EXPECT_STREQ(operation_name(Operation::Diagnosis), "diagnosis");
}

}  // namespace
}  // namespace kernelarc

// An agent follows its parent's diagnosis: a share of its moves from a node whose diagnosis
// suggests a knob its strategy may change is that knob moved one step, when the step is valid
// and new; and the same seed and results give the same proposals.
#include <gtest/gtest.h>

#include <vector>

#include "agent_test_support.h"
#include "optimize/agent.h"

namespace kernelarc {
namespace {

const KnobSuggestion kRaiseVec{"VEC", KnobDirection::Raise, std::nullopt,
                               "loads are 4 bytes wide (VEC=2 of bfloat16)"};
const KnobSuggestion kLowerThreads{"BLOCK_THREADS", KnobDirection::Lower, std::nullopt,
                                   "only 64 blocks for 132 SMs"};

class AgentDiagnosis : public ::testing::Test {
 protected:
  Agent make_agent(const std::string& strategy, double share, uint64_t seed = 5) {
    AgentOptions options;
    options.policy = "beam";
    options.seed = seed;
    options.diagnosis_share = share;
    return Agent(strategy, find_strategy(strategy), {"row"}, lookup(), options);
  }
  SpaceLookup lookup() const {
    return [this](const std::string& name) { return name == "row" ? &space_ : nullptr; };
  }
  // The agent's seed, added and recorded as passed with `suggestions`; returns its node.
  int seed(Agent& agent, std::vector<KnobSuggestion> suggestions) {
    const auto first = agent.propose(view_);
    EXPECT_TRUE(first && first->proposal.operation == Operation::Seed);
    const int node = agent.add(first->proposal);
    agent.record(node, passed(1), std::move(suggestions));
    return node;
  }

  ConstrainedSpace space_ = row_space(2, 256);
  SharedView view_;
};

TEST_F(AgentDiagnosis, FollowsTheSuggestionToTheExpectedChild) {
  Agent agent = make_agent("memory", 1.0);
  const int parent = seed(agent, {kRaiseVec});
  const auto next = agent.propose(view_);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->proposal.operation, Operation::Diagnosis);
  EXPECT_EQ(next->proposal.parent, parent);
  EXPECT_EQ(next->proposal.agent, "memory");
  EXPECT_EQ(format_knob_point(next->proposal.point), "BLOCK_THREADS=256,VEC=4");
  EXPECT_EQ(next->note, "diagnosis: raise VEC (loads are 4 bytes wide (VEC=2 of bfloat16))");
  agent.add(next->proposal);
  EXPECT_EQ(agent.summary()["diagnosis_moves"], 1);
}

TEST_F(AgentDiagnosis, IgnoresKnobsOutsideItsStrategyAndAShareOfZero) {
  Agent memory = make_agent("memory", 1.0);
  seed(memory, {kLowerThreads});
  const auto next = memory.propose(view_);
  ASSERT_TRUE(next);
  EXPECT_NE(next->proposal.operation, Operation::Diagnosis);
  EXPECT_FALSE(next->note);

  Agent parallelism = make_agent("parallelism", 1.0);
  seed(parallelism, {kRaiseVec, kLowerThreads});
  const auto followed = parallelism.propose(view_);
  ASSERT_TRUE(followed);
  EXPECT_EQ(format_knob_point(followed->proposal.point), "BLOCK_THREADS=128,VEC=2");
  EXPECT_EQ(followed->note, "diagnosis: lower BLOCK_THREADS (only 64 blocks for 132 SMs)");

  Agent never = make_agent("memory", 0.0);
  seed(never, {kRaiseVec});
  EXPECT_NE(never.propose(view_)->proposal.operation, Operation::Diagnosis);
}

TEST_F(AgentDiagnosis, SkipsAStepThatBreaksAConstraintOrIsKnown) {
  space_ = row_space(2, 1024);  // VEC=4 would make 4096 > 2048
  Agent constrained = make_agent("memory", 1.0);
  seed(constrained, {kRaiseVec});
  const auto next = constrained.propose(view_);
  ASSERT_TRUE(next);
  EXPECT_NE(next->proposal.operation, Operation::Diagnosis);
  EXPECT_FALSE(next->note);

  space_ = row_space(2, 256);
  Agent known = make_agent("memory", 1.0);
  const int parent = seed(known, {kRaiseVec});
  Proposal sibling{.parent = parent,
                   .agent = "memory",
                   .template_name = "row",
                   .point = {{"VEC", int64_t{4}}, {"BLOCK_THREADS", int64_t{256}}},
                   .operation = Operation::Inherit};
  known.add(sibling);
  const auto again = known.propose(view_);
  ASSERT_TRUE(again);
  EXPECT_NE(again->proposal.operation, Operation::Diagnosis);
}

// The proposals of an agent fed the same results, twice, and whether any followed a diagnosis.
std::vector<std::string> run(Agent agent, bool& followed) {
  std::vector<std::string> proposals;
  for (int i = 0; i < 12; ++i) {
    const auto next = agent.propose(SharedView{});
    if (!next) break;
    followed = followed || next->proposal.operation == Operation::Diagnosis;
    proposals.push_back(std::string(operation_name(next->proposal.operation)) + " " +
                        format_knob_point(next->proposal.point));
    const int node = agent.add(next->proposal);
    const auto vec = std::get<int64_t>(next->proposal.point.at("VEC"));
    agent.record(node, passed(static_cast<double>(vec)), {kRaiseVec, kLowerThreads});
  }
  return proposals;
}

TEST_F(AgentDiagnosis, SameSeedAndResultsSameProposals) {
  bool followed = false;
  const auto first = run(make_agent("explore", 0.5, 11), followed);
  const auto second = run(make_agent("explore", 0.5, 11), followed);
  EXPECT_EQ(first, second);
  EXPECT_TRUE(followed);
  EXPECT_GE(first.size(), 6u);
}

}  // namespace
}  // namespace kernelarc

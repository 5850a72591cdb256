// An agent limited to some knob roles starts again from another agent's best as soon as that
// beats its own beyond noise, and only then; the explorer, which changes every knob, keeps its
// own line; another agent's program is never taken, since revisions are an agent's own.
#include <gtest/gtest.h>

#include <string>

#include "agent_test_support.h"
#include "optimize/agent.h"
#include "optimize/code_moves.h"

namespace kernelarc {
namespace {

AgentBest best_of(const std::string& agent, int64_t candidate, const std::string& template_name,
                  KnobPoint point, double fitness, double noise = 0.01) {
  return {agent, candidate, template_name, std::move(point), fitness, noise};
}

KnobPoint row_point(int64_t vec, int64_t threads) {
  return {{"VEC", vec}, {"BLOCK_THREADS", threads}};
}

class AgentTeamBest : public ::testing::Test {
 protected:
  Agent make_agent(const std::string& strategy, bool with_code = false) {
    AgentOptions options;
    options.policy = "beam";
    options.seed = 3;
    options.min_gain = 0.01;
    std::vector<std::string> templates{"row"};
    if (with_code) {
      options.code_template = "program";
      options.code_share = 0;
      templates.push_back("program");
    }
    return Agent(strategy, find_strategy(strategy), templates, lookup(), options);
  }
  SpaceLookup lookup() const {
    return [this](const std::string& name) -> const ConstrainedSpace* {
      if (name == "row") return &row_;
      return name == "program" ? &program_ : nullptr;
    };
  }
  // Proposes, adds and records every seed of the agent at `fitness` (noise 0.01).
  void seed(Agent& agent, double fitness) {
    for (int i = 0; i < 4; ++i) {
      const auto next = agent.propose(SharedView{});
      ASSERT_TRUE(next);
      if (next->proposal.operation != Operation::Seed) return;
      agent.record(agent.add(next->proposal), passed(fitness, 0.01));
    }
  }

  // Seeded at fitness 1 and shown parallelism's best at `fitness`, the agent keeps to its own
  // tree: no redirect, no new start.
  void expect_own_line(const std::string& strategy, double fitness) {
    Agent agent = make_agent(strategy);
    seed(agent, 1.0);
    const SharedView view{{}, {best_of("parallelism", 7, "row", row_point(2, 512), fitness)}};
    const auto next = agent.propose(view);
    ASSERT_TRUE(next);
    EXPECT_FALSE(next->redirect);
    EXPECT_NE(next->proposal.operation, Operation::Seed);
  }

  ConstrainedSpace row_ = row_space(2, 256);
  ConstrainedSpace program_ = code_space();
};

TEST_F(AgentTeamBest, RestrictedAgentTakesABetterBestAndThenWorksFromIt) {
  Agent memory = make_agent("memory");
  seed(memory, 1.0);
  const SharedView view{{}, {best_of("parallelism", 7, "row", row_point(2, 512), 1.5)}};

  const auto adopted = memory.propose(view);
  ASSERT_TRUE(adopted);
  EXPECT_EQ(adopted->proposal.operation, Operation::Seed);
  EXPECT_FALSE(adopted->proposal.parent);
  EXPECT_EQ(format_knob_point(adopted->proposal.point), "BLOCK_THREADS=512,VEC=2");
  EXPECT_EQ(adopted->inspired_by_candidates, std::vector<int64_t>{7});
  ASSERT_TRUE(adopted->redirect);
  EXPECT_NE(adopted->redirect->find(
                "memory was beaten beyond noise; took parallelism's best (candidate 7"),
            std::string::npos);
  const int start = memory.add(adopted->proposal);
  EXPECT_TRUE(memory.record(start, passed(1.5, 0.01)));

  // Its own best now equals the team's: it moves its own knob (VEC) of that start.
  const auto next = memory.propose(view);
  ASSERT_TRUE(next);
  EXPECT_FALSE(next->redirect);
  EXPECT_EQ(next->proposal.parent, start);
  EXPECT_EQ(std::get<int64_t>(next->proposal.point.at("BLOCK_THREADS")), 512);
  EXPECT_NE(std::get<int64_t>(next->proposal.point.at("VEC")), 2);
}

TEST_F(AgentTeamBest, ABestWithinNoiseIsNotTaken) {
  expect_own_line("memory", 1.008);
}

TEST_F(AgentTeamBest, TheExplorerKeepsItsOwnLine) {
  expect_own_line("explore", 3.0);
}

TEST_F(AgentTeamBest, AnotherAgentsProgramIsSkippedForTheNextBest) {
  Agent memory = make_agent("memory", true);
  seed(memory, 1.0);
  const SharedView view{{},
                        {best_of("compute", 9, "program", {{"REVISION", int64_t{5}}}, 2.0),
                         best_of("parallelism", 7, "row", row_point(2, 512), 1.5)}};
  const auto next = memory.propose(view);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->proposal.template_name, "row");
  EXPECT_EQ(next->inspired_by_candidates, std::vector<int64_t>{7});
}

}  // namespace
}  // namespace kernelarc

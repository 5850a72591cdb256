#include <gtest/gtest.h>

#include "../core/test_support.h"
#include "search/budget_bandit.h"

namespace kernelarc {
namespace {

using testing::input_error_of;

// Runs `rounds` allocations; `gain_of(agent, round)` is the verified gain (0: no improvement).
template <typename Gain>
std::vector<std::string> allocate(BudgetBandit& bandit, int rounds, Gain gain_of) {
  std::vector<std::string> sequence;
  for (int round = 0; round < rounds; ++round) {
    const std::string agent = bandit.next_agent();
    const double gain = gain_of(agent, round);
    bandit.record(agent, gain > 0, gain);
    sequence.push_back(agent);
  }
  return sequence;
}

TEST(SearchBudgetBandit, FavoursTheAgentWithGainsAndKeepsTheFloor) {
  BudgetBandit bandit({"synth", "llm", "tuner"}, {.floor_share = 0.1, .seed = 1});
  allocate(bandit, 300, [](const std::string& agent, int) { return agent == "llm" ? 0.05 : 0.0; });
  const std::vector<int64_t>& counts = bandit.allocations();
  EXPECT_EQ(counts[0] + counts[1] + counts[2], 300);
  EXPECT_GT(counts[1], 150);
  EXPECT_GE(counts[0], 30 - 1);
  EXPECT_GE(counts[2], 30 - 1);
}

TEST(SearchBudgetBandit, FollowsAChangeOfLuck) {
  BudgetBandit bandit({"a", "b"}, {.floor_share = 0.05, .seed = 2});
  allocate(bandit, 200, [](const std::string& agent, int) { return agent == "a" ? 0.1 : 0.0; });
  const int64_t b_before = bandit.allocations()[1];
  allocate(bandit, 200, [](const std::string& agent, int) { return agent == "b" ? 0.1 : 0.0; });
  EXPECT_GT(bandit.allocations()[1] - b_before, 100);
}

TEST(SearchBudgetBandit, AdviceTurnsAllocationsToTheAdvisedAgentsAndCanBeWithdrawn) {
  BudgetBandit bandit({"memory", "parallelism", "compute"}, {.floor_share = 0.1, .seed = 3});
  const auto none = [](const std::string&, int) { return 0.0; };
  allocate(bandit, 60, none);  // no gains: an even share
  const std::vector<int64_t> before = bandit.allocations();
  bandit.advise({"memory"}, 0.5);
  allocate(bandit, 100, none);
  const int64_t advised = bandit.allocations()[0] - before[0];
  EXPECT_GT(advised, 60);
  EXPECT_GE(bandit.allocations()[1] - before[1], 5) << "the floor share still holds";
  bandit.advise({}, 0.5);
  const std::vector<int64_t> withdrawn = bandit.allocations();
  allocate(bandit, 90, none);
  EXPECT_LT(bandit.allocations()[0] - withdrawn[0], 60);
  EXPECT_NE(input_error_of([&] { bandit.advise({"nobody"}, 0.5); }), "");
  EXPECT_NE(input_error_of([&] { bandit.advise({"memory"}, -1); }), "");
}

TEST(SearchBudgetBandit, SameSeedSameSequence) {
  const auto run = [](uint64_t seed) {
    BudgetBandit bandit({"a", "b", "c"}, {.seed = seed});
    return allocate(bandit, 100, [](const std::string& agent, int round) {
      return (agent == "b" && round % 3 == 0) || (agent == "c" && round % 5 == 0) ? 0.02 : 0.0;
    });
  };
  EXPECT_EQ(run(9), run(9));
}

TEST(SearchBudgetBandit, RejectsBadInput) {
  EXPECT_EQ(input_error_of([] { BudgetBandit({}); }),
            "budget bandit: agents: expected at least one");
  EXPECT_EQ(input_error_of([] {
              BudgetBandit({"a", "b", "c"}, {.floor_share = 0.5});
            }),
            "budget bandit: floor_share: expected a value in [0, 1 / 3] for 3 agents");
  BudgetBandit bandit({"a"});
  EXPECT_EQ(input_error_of([&] { bandit.record("z", true, 1); }),
            "budget bandit: unknown agent 'z'");
}

}  // namespace
}  // namespace kernelarc

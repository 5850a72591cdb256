// Every kind of board post reads whole: the redirects an agent posts (a restart, a start drafted
// from the board's conclusions, another agent's best taken) and a conclusion. The restart's text
// once lost its template name, read after the proposal had been moved out.
#include <gtest/gtest.h>

#include <string>

#include "agent_test_support.h"
#include "optimize/agent.h"
#include "optimize/board_text.h"
#include "optimize/conclusions.h"

namespace kernelarc {
namespace {

TEST(BoardText, Restart) {
  EXPECT_EQ(restart_text("memory", "row"), "memory plateaued; restarted from a fresh point of row");
}

TEST(BoardText, StartFromBoardConclusions) {
  EXPECT_EQ(board_start_text("memory", 2, "row"),
            "memory plateaued; drafted a new start from 2 board conclusion(s) on row applied "
            "together to its best");
}

TEST(BoardText, StartFromAnotherAgentsBest) {
  EXPECT_EQ(start_from_text("memory", "was beaten beyond noise", "parallelism", 7, "row",
                            "VEC=2 BLOCK_THREADS=512"),
            "memory was beaten beyond noise; took parallelism's best (candidate 7, row VEC=2 "
            "BLOCK_THREADS=512) as a new start for its own knobs");
}

TEST(BoardText, ConclusionNamesTheChangeAndWhereItHeld) {
  const Conclusion conclusion{.template_name = "row",
                              .changes = {{"VEC", KnobValue(int64_t{1}), KnobValue(int64_t{4})}},
                              .speedup = {1.5, 1.25, 1.75},
                              .before_candidate = 3,
                              .after_candidate = 5};
  EXPECT_EQ(conclusion_text(conclusion, "rmsnorm_f32", "large", "cpu"),
            "(rmsnorm_f32, large, cpu): in row changing VEC from 1 to 4 made it faster by 1.50x "
            "(1.25-1.75), evidence candidates 3 and 5");
}

// The agent's own restart post ends with the template it restarted in.
TEST(BoardText, AgentRestartPostNamesItsTemplate) {
  ConstrainedSpace row = row_space(1, 128);
  AgentOptions options;
  options.policy = "beam";
  options.seed = 5;
  options.plateau = 1;
  Agent agent(
      "explore", find_strategy("explore"), {"row"},
      [&](const std::string& name) { return name == "row" ? &row : nullptr; }, options);
  std::optional<std::string> redirect;
  for (int i = 0; i < 40 && !redirect; ++i) {
    const auto next = agent.propose(SharedView{});
    ASSERT_TRUE(next);
    agent.record(agent.add(next->proposal), passed(1.0, 0.01));
    redirect = next->redirect;
  }
  ASSERT_TRUE(redirect);
  EXPECT_EQ(*redirect, "explore plateaued; restarted from a fresh point of row");
}

}  // namespace
}  // namespace kernelarc

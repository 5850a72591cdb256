// Fault: `kernelarc optimize` killed with SIGKILL twice, first mid-search, then (resumed) once
// the search budget is spent, during the final side-by-side re-measurement. Each resume keeps
// every stored evaluation unchanged and the run ends having evaluated each candidate once.
// (tests/cli/optimize_cli_test.cpp covers one kill mid-search and one resume.)
#include <gtest/gtest.h>

#include "fault_test_support.h"

namespace kernelarc::faults {
namespace {

constexpr int kBudget = 4;

TEST_F(FaultTest, OptimizeKilledMidSearchAndAgainDuringTheFinalsResumesWithNothingLost) {
  const fs::path workspace = dir_ / "ws";
  const std::string problem = (kSource / "problems/cpu/rmsnorm_f32").string();
  const std::vector<std::string> quick{"--workspace",    workspace.string(),
                                       "--workloads",    "9f5092c6",
                                       "--trials",       "1",
                                       "--warmup",       "1",
                                       "--iterations",   "3",
                                       "--final-top",    "2",
                                       "--final-rounds", "12",
                                       "--no-baseline",  "--no-skills",
                                       "--plain"};
  auto with = [&](std::vector<std::string> arguments) {
    arguments.insert(arguments.end(), quick.begin(), quick.end());
    return arguments;
  };

  seed_oracle(workspace);
  std::map<int64_t, StoredResult> before_first;
  {
    Kernelarc first(with({"optimize", problem, "--budget", std::to_string(kBudget), "--seed", "3"}),
                    log("first"));
    ASSERT_TRUE(wait_until(first, [&] { return budget_used(workspace) >= 2; }))
        << first.wait().output;
    const Outcome killed = first.kill_now();
    ASSERT_EQ(killed.signal, SIGKILL) << killed.output;
    before_first = stored_evaluations(workspace);
  }
  ASSERT_GE(before_first.size(), 2u);
  ASSERT_LT(budget_used(workspace), kBudget + 1) << "the first kill came after the search";

  std::map<int64_t, StoredResult> before_second;
  {
    // The baseline and the budget: from here on the run only re-measures its finalists.
    Kernelarc second(with({"optimize", problem, "--resume"}), log("second"));
    ASSERT_TRUE(wait_until(second, [&] { return budget_used(workspace) == kBudget + 1; }))
        << second.wait().output;
    const Outcome killed = second.kill_now();
    ASSERT_EQ(killed.signal, SIGKILL) << "it finished before the kill:\n" << killed.output;
    EXPECT_NE(killed.output.find("(stored)"), std::string::npos) << killed.output;
    before_second = stored_evaluations(workspace);
  }
  expect_kept(before_first, before_second);
  ASSERT_EQ(before_second.size(), static_cast<std::size_t>(kBudget + 1));

  const Outcome resumed = run_kernelarc(with({"optimize", problem, "--resume"}), log("third"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("re-measured side by side"), std::string::npos) << resumed.output;
  const auto after = stored_evaluations(workspace);
  expect_kept(before_second, after);
  EXPECT_EQ(after.size(), before_second.size()) << "something was evaluated twice";

  Workspace store(workspace);
  const auto run = store.database().list_runs().front();
  EXPECT_EQ(run.status, RunStatus::Finished);
  EXPECT_EQ(store.database().budget_of(run.id).used, kBudget + 1);
  EXPECT_EQ(store.database().candidates_of(run.id).size(), static_cast<std::size_t>(kBudget + 1));
}

}  // namespace
}  // namespace kernelarc::faults

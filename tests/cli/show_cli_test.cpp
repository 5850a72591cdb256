// `kernelarc show` on a workspace written by hand: the winner's lineage says why a step was
// proposed, and the stored profiles are printed; `optimize --profile` stores its profile records
// for `show`.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>

#include "cli/cli_test_support.h"
#include "store/workspace.h"

namespace {

namespace fs = std::filesystem;
using kernelarc::Workspace;

class ShowCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kernelarc-show-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

kernelarc::NewCandidate candidate(const std::string& agent, std::optional<int64_t> parent, int vec,
                                  const std::string& note) {
  kernelarc::NewCandidate row;
  row.agent = agent;
  row.parent_id = parent;
  row.solution_key = "0123";
  row.template_name = "rownorm";
  row.knob_point = {{"VEC", vec}};
  row.note = note;
  return row;
}

TEST_F(ShowCli, PrintsEachLineageStepsNoteAndTheStoredProfiles) {
  const fs::path root = dir_ / "ws";
  int64_t run_id = 0;
  {
    Workspace workspace(root);
    kernelarc::Database& db = workspace.database();
    run_id = db.create_run({"rmsnorm_h4096", "0123", "cuda:0", 1, nlohmann::json::object(), 2});
    const int64_t seed = db.add_candidate(run_id, candidate("memory", std::nullopt, 4, ""));
    const int64_t step = db.add_candidate(
        run_id, candidate("memory", seed, 8, "diagnosis: raise VEC (loads are 8 bytes wide)"));
    db.record_profile({step,
                       "w-large",
                       {{"calls", 3},
                        {"required_bytes_per_call", 4e6},
                        {"aggregate",
                         {{"launches", 3},
                          {"duration_ns", 9000},
                          {"dram_bytes_read", 12e6},
                          {"dram_bytes_write", 0},
                          {"dram_throughput_pct", 41.5},
                          {"sm_throughput_pct", nullptr},
                          {"achieved_occupancy_pct", 62.0},
                          {"l2_hit_rate_pct", nullptr},
                          {"max_registers_per_thread", 32},
                          {"stalls", {{"long_scoreboard", 4.25}, {"wait", 1.5}}}}},
                        {"red_flag", "DRAM moved 1.0x the required bytes"}},
                       ""});
    const nlohmann::json lineage = {
        {{"candidate", seed}, {"agent", "memory"}, {"operation", "seed"}, {"changes", ""}},
        {{"candidate", step},
         {"agent", "memory"},
         {"operation", "diagnosis"},
         {"changes", "VEC 4->8"}}};
    db.save_agent_state(
        run_id, "orchestrator",
        {{"stop_reason", "budget"},
         {"finalists", {{{"candidate", step}, {"label", "rownorm VEC=8"}, {"agent", "memory"}}}},
         {"speedup", {{"value", 1.5}, {"low", 1.4}, {"high", 1.6}}},
         {"lineage", lineage}});
    db.finish_run(run_id, kernelarc::RunStatus::Finished);
  }
  const auto show = run("show " + std::to_string(run_id) + " --workspace " + root.string());
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("lineage: #1 memory seed -> #2 memory diagnosis (VEC 4->8): raise "
                             "VEC (loads are 8 bytes wide)\n"),
            std::string::npos)
      << show.output;
  EXPECT_NE(show.output.find("\nprofile:\n  #2 on workload w-large: Nsight Compute: 3 launches "
                             "over 3 calls; DRAM 4 MB/call"),
            std::string::npos)
      << show.output;
  EXPECT_NE(show.output.find("DRAM throughput 41.5%, SM throughput -"), std::string::npos)
      << show.output;
  EXPECT_NE(show.output.find("top stall long_scoreboard (4.25 cycles/instruction)"),
            std::string::npos)
      << show.output;
  EXPECT_NE(show.output.find("\n    RED FLAG: DRAM moved 1.0x the required bytes\n"),
            std::string::npos)
      << show.output;
}

// On the CPU the record says why there is no profile; it is stored all the same.
TEST_F(ShowCli, OptimizeWithProfileStoresTheWinnersRecord) {
  const fs::path root = dir_ / "ws";
  const auto optimize =
      run("optimize " + (fs::path(KERNELARC_SOURCE_DIR) / "problems/cpu/softmax_f32").string() +
          " --budget 1 --seed 1 --profile --no-skills --workspace " + root.string() + " --out " +
          (dir_ / "best").string() +
          " --workloads largest --trials 1 --warmup 1 --iterations 3 "
          "--final-top 1 --final-rounds 1 --plain");
  ASSERT_EQ(optimize.exit_code, 0) << optimize.output;
  int64_t run_id = 0;
  int64_t winner = 0;
  {
    Workspace workspace(root);
    run_id = workspace.database().list_runs().front().id;
    const auto profiles = workspace.database().profiles_of(run_id);
    ASSERT_EQ(profiles.size(), 1u) << optimize.output;
    winner = profiles.front().candidate_id;
    EXPECT_TRUE(profiles.front().record.contains("unavailable"));
  }
  const auto show = run("show " + std::to_string(run_id) + " --workspace " + root.string());
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("winner: candidate " + std::to_string(winner)), std::string::npos)
      << show.output;
  EXPECT_NE(show.output.find("\nprofile:\n  #" + std::to_string(winner) + " on workload "),
            std::string::npos)
      << show.output;
  EXPECT_NE(show.output.find("no profile: profiling with Nsight Compute is a CUDA feature"),
            std::string::npos)
      << show.output;
}

}  // namespace

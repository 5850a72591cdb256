// Issue 25, item 6: the README's command for the example command synthesizer works as shown:
// run from the repository root, echo_parent.py answers the run's drafts (from the baseline it
// is shown) and later moves (from their parents), so the run gets programs and ends cleanly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cli/cli_test_support.h"
#include "source_dir.h"
#include "store/workspace.h"

namespace {

namespace fs = std::filesystem;

TEST(CommandSynthExample, EchoParentAnswersEveryRequestOfARun) {
  const fs::path workspace =
      fs::temp_directory_path() / ("kernelarc-echo-example-" + std::to_string(getpid()));
  fs::remove_all(workspace);
  // The README's command (`cd` to the repository root first), with a workspace of its own and a
  // quick guard so that the test stays short.
  const std::string arguments =
      "optimize problems/cpu/rmsnorm_f32 --synth command --synth-command "
      "\"python3 examples/synthesizers/echo_parent.py\" --budget 3 --workspace " +
      workspace.string() +
      " --workloads 9f5092c6 --trials 1 --warmup 1 --iterations 5 --timing-budget 0.1"
      " --final-top 2 --final-rounds 1 --no-skills --plain";
  const fs::path before = fs::current_path();
  fs::current_path(kSource);
  const CommandResult result = run(arguments);
  fs::current_path(before);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  kernelarc::Workspace store(workspace);
  const auto run_record = store.database().list_runs().back();
  int programs = 0;
  for (const auto& candidate : store.database().candidates_of(run_record.id))
    if (const auto synthesis = store.database().synthesis_of(candidate.id)) {
      EXPECT_EQ(synthesis->failure, "") << result.output;
      ++programs;
    }
  EXPECT_EQ(programs, 3) << result.output;
  fs::remove_all(workspace);
}

}  // namespace

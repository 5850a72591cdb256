// Fault: the object store's disk fills up mid-run. RLIMIT_FSIZE in the kernelarc child (with
// SIGXFSZ ignored) makes every write past 1.2 MB fail with EFBIG, as a full disk fails with
// ENOSPC. The shared arena (1 MiB) and the database stay below it; the candidates' solutions do
// not, since each carries a 1.5 MB file (--file). So the baseline is evaluated and stored, and
// storing the first template candidate fails: the run must stop with a message naming the object
// store file, leave no partial object, and, with the limit lifted, resume to the end losing
// nothing.
#include <gtest/gtest.h>

#include "fault_test_support.h"

namespace kernelarc::faults {
namespace {

constexpr rlim_t kFileSizeLimit = 1200 * 1000;
constexpr int kBudget = 2;

TEST_F(FaultTest, FullDiskStopsTheRunWithTheFileNamedAndResumeLosesNothing) {
  const fs::path workspace = dir_ / "ws";
  seed_oracle(workspace);
  std::string padding;
  for (int line = 0; padding.size() < 1500 * 1000; ++line)
    padding += "// padding line " + std::to_string(line) + ", never compiled into anything\n";
  write_text(dir_ / "padding.h", padding);
  const std::vector<std::string> arguments{"optimize",
                                           (kSource / "problems/cpu/rmsnorm_f32").string(),
                                           "--budget",
                                           std::to_string(kBudget),
                                           "--workspace",
                                           workspace.string(),
                                           "--file",
                                           "padding.h=" + (dir_ / "padding.h").string(),
                                           "--workloads",
                                           "9f5092c6",
                                           "--trials",
                                           "1",
                                           "--warmup",
                                           "1",
                                           "--iterations",
                                           "3",
                                           "--no-baseline",
                                           "--final-top",
                                           "1",
                                           "--final-rounds",
                                           "1",
                                           "--no-skills",
                                           "--plain"};

  const Outcome full = run_kernelarc(arguments, log("full"), kFileSizeLimit);
  EXPECT_EQ(full.signal, 0) << full.output;
  EXPECT_NE(full.exit_code, 0) << full.output;
  EXPECT_NE(full.exit_code, -1) << full.output;
  EXPECT_NE(full.output.find((workspace / "objects").string()), std::string::npos) << full.output;
  EXPECT_NE(full.output.find("File too large"), std::string::npos) << full.output;
  EXPECT_EQ(full.output.find("terminate called"), std::string::npos) << full.output;
  for (const auto& entry : fs::recursive_directory_iterator(workspace / "objects"))
    EXPECT_NE(entry.path().filename().string()[0], '.') << entry.path() << " is a partial object";
  const auto before = stored_evaluations(workspace);
  ASSERT_EQ(before.size(), 1u) << "the baseline should have been stored\n" << full.output;

  std::vector<std::string> resume = arguments;
  resume.push_back("--resume");
  const Outcome resumed = run_kernelarc(resume, log("resumed"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("(stored)"), std::string::npos) << resumed.output;
  const auto after = stored_evaluations(workspace);
  expect_kept(before, after);
  EXPECT_EQ(after.size(), static_cast<std::size_t>(kBudget + 1));
  EXPECT_EQ(budget_used(workspace), kBudget + 1);
}

}  // namespace
}  // namespace kernelarc::faults

// The one description of how a child ended: which deaths it blames on the out-of-memory killer,
// and what it then says of the memory.
#include "backend/exit_status.h"

#include <signal.h>

#include <gtest/gtest.h>

namespace kernelarc {
namespace {

TEST(DescribeExit, ASIGKILLNobodyHereSentIsMostLikelyTheOutOfMemoryKiller) {
  const ExitStatus killed{.signaled = true, .signal = SIGKILL, .max_rss_kib = 15'728'640};
  EXPECT_TRUE(killed_for_memory(killed));
  EXPECT_EQ(describe_exit(killed, {.during = "while drawing workload big",
                                   .workload_bytes = 8.59e9,
                                   .available_bytes = int64_t{22'100'000'000}}),
            "killed by signal SIGKILL (Killed) while drawing workload big, most likely by the "
            "kernel's out-of-memory killer: it peaked at 16.1 GB resident, its workload's inputs "
            "and outputs take 8.59 GB, this machine has 22.1 GB available");
  // Only what is known is said.
  EXPECT_EQ(describe_exit({.signaled = true, .signal = SIGKILL}),
            "killed by signal SIGKILL (Killed), most likely by the kernel's out-of-memory killer");
  EXPECT_EQ(describe_exit({.signaled = true, .signal = SIGKILL}, {.workload_bytes = 24}),
            "killed by signal SIGKILL (Killed), most likely by the kernel's out-of-memory killer: "
            "its workload's inputs and outputs take 24 bytes");
}

TEST(DescribeExit, AKillThisProcessSentItselfIsNotBlamedOnMemory) {
  const ExitStatus stopped{
      .signaled = true, .signal = SIGKILL, .max_rss_kib = 1 << 20, .killed_by_parent = true};
  EXPECT_FALSE(killed_for_memory(stopped));
  const std::string text = describe_exit(stopped, {.workload_bytes = 1e9});
  EXPECT_EQ(text, "killed by signal SIGKILL (Killed)");
}

TEST(DescribeExit, OtherSignalsAndExitsAreSaidAsTheyAre) {
  EXPECT_EQ(describe_exit({.signaled = true, .signal = SIGSEGV, .max_rss_kib = 1 << 20},
                          {.during = "during a call"}),
            "killed by signal SIGSEGV (Segmentation fault) during a call");
  EXPECT_EQ(describe_exit({.exit_code = 3, .max_rss_kib = 1 << 20}), "exited with status 3");
}

}  // namespace
}  // namespace kernelarc

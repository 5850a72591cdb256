// Telling whether the process that owns a record still runs, and not a later one with its pid.
#include "core/process_identity.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace kernelarc {
namespace {

TEST(ProcessIdentity, ThisProcessRunsAnEndedOneDoesNotAnotherHostsIsUnknown) {
  const ProcessIdentity self = this_process();
  EXPECT_EQ(self.pid, getpid());
  EXPECT_GT(self.start_ticks, 0);
  EXPECT_EQ(process_alive(self), true);

  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ProcessIdentity ended = self;
  ended.pid = child;
  waitpid(child, nullptr, 0);
  EXPECT_EQ(process_alive(ended), false);

  // The same pid started at another time is another process.
  ProcessIdentity reused = self;
  reused.start_ticks += 1;
  EXPECT_EQ(process_alive(reused), false);

  ProcessIdentity elsewhere = self;
  elsewhere.host += "-elsewhere";
  EXPECT_EQ(process_alive(elsewhere), std::nullopt);
}

}  // namespace
}  // namespace kernelarc

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/device.h"
#include "backend/process.h"
#include "backend/worker/shared_arena.h"
#include "core/error.h"

namespace kernelarc {
namespace {

TEST(CpuDevice, AllocatesAlignedAndCopies) {
  auto device = make_cpu_device();
  EXPECT_EQ(device->kind(), "cpu");
  EXPECT_FALSE(device->description().empty());
  EXPECT_EQ(device->stream(), nullptr);
  void* buffer = device->allocate(100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 64, 0u);
  std::vector<uint8_t> in(100), out(100);
  for (int i = 0; i < 100; ++i) in[i] = static_cast<uint8_t>(i);
  device->copy_from_host(buffer, in.data(), in.size());
  device->copy_to_host(out.data(), buffer, out.size());
  EXPECT_EQ(in, out);
  device->release(buffer);
}

TEST(CpuDevice, FillPatternRepeatsOddSizedPatterns) {
  auto device = make_cpu_device();
  std::vector<uint8_t> buffer(10, 0);
  const uint8_t pattern[3] = {1, 2, 3};
  device->fill_pattern(buffer.data(), buffer.size(), pattern);
  EXPECT_EQ(buffer, (std::vector<uint8_t>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1}));
}

TEST(CpuDevice, TimedCallReturnsTheCodeAndATime) {
  auto device = make_cpu_device();
  TimedCall call = device->timed_call([] { return 5; });
  EXPECT_EQ(call.return_code, 5);
  EXPECT_GE(call.nanoseconds, 0);
  EXPECT_EQ(call.clock, "steady_clock");
  EXPECT_TRUE(call.launched.empty());
}

TEST(CudaDevice, WithoutCudaSupportMakingOneThrows) {
#ifdef KERNELARC_WITH_CUDA
  GTEST_SKIP() << "built with CUDA";
#else
  EXPECT_THROW(make_cuda_device(0), InternalError);
#endif
}

TEST(Process, RunCommandCapturesOutputAndStatus) {
  CommandResult result =
      run_command({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, std::chrono::seconds(10));
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.status.exit_code, 3);
  EXPECT_NE(result.output.find("out\n"), std::string::npos);
  EXPECT_NE(result.output.find("err\n"), std::string::npos);
}

TEST(Process, RunCommandKillsTheWholeGroupOnTimeout) {
  // The grandchild `sleep` holds the output pipe too; it must die with its parent.
  CommandResult result =
      run_command({"/bin/sh", "-c", "sleep 30 & sleep 30"}, std::chrono::milliseconds(200));
  EXPECT_TRUE(result.timed_out);
  EXPECT_TRUE(result.status.signaled);
}

TEST(Process, ExecFailureIsStatus127) {
  CommandResult result = run_command({"/nonexistent/program"}, std::chrono::seconds(10));
  EXPECT_EQ(result.status.exit_code, 127);
  EXPECT_NE(result.output.find("cannot execute /nonexistent/program"), std::string::npos);
}

TEST(Process, FindsExecutablesOnPath) {
  EXPECT_TRUE(find_executable("sh").has_value());
  EXPECT_FALSE(find_executable("kernelarc-no-such-program").has_value());
}

TEST(SharedArena, GrowsAndIsSharedThroughTheFile) {
  SharedArena arena;
  EXPECT_EQ(arena.size(), 0u);
  std::span<std::byte> bytes = arena.reserve(10);
  EXPECT_GE(bytes.size(), 10u);
  bytes[5] = std::byte{42};

  ArenaMapping other("/proc/self/fd/" + std::to_string(arena.fd()));
  EXPECT_EQ(other.bytes()[5], std::byte{42});
  other.bytes()[6] = std::byte{7};
  EXPECT_EQ(arena.reserve(0)[6], std::byte{7});

  std::size_t before = arena.size();
  arena.reserve(before + 1)[before] = std::byte{9};
  other.remap(arena.size());
  EXPECT_EQ(other.bytes()[before], std::byte{9});
  EXPECT_EQ(other.bytes()[5], std::byte{42});
}

TEST(SharedArena, LeavesNothingBehindInTheFileSystem) {
  int fd = create_anonymous_shared_file();
  auto link = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd));
  close(fd);
  EXPECT_NE(link.string().find("(deleted)"), std::string::npos) << link;
  EXPECT_FALSE(std::filesystem::exists(link.parent_path()));
}

}  // namespace
}  // namespace kernelarc

// The last-level cache size: read from sysfs (the highest level, the largest at that level), from
// cpuid when sysfs says nothing, and capped per CPU where a VM claims more than any CPU has.
#include <gtest/gtest.h>

#include <fstream>

#include "backend/cpu/cpu_cache.h"
#include "core/test_support.h"

namespace kernelarc {
namespace {

using kernelarc::testing::TempDir;

void write_index(const std::filesystem::path& dir, int index, int level, const std::string& size) {
  const auto entry = dir / ("index" + std::to_string(index));
  std::filesystem::create_directories(entry);
  std::ofstream(entry / "level") << level << "\n";
  std::ofstream(entry / "size") << size << "\n";
}

TEST(CpuCache, SysfsGivesTheHighestLevel) {
  TempDir temp;
  write_index(temp.path(), 0, 1, "48K");
  write_index(temp.path(), 1, 1, "32K");
  write_index(temp.path(), 2, 2, "2048K");
  write_index(temp.path(), 3, 3, "520192K");  // this VM's claim: 508 MiB
  EXPECT_EQ(sysfs_last_level_cache_bytes(temp.path()), std::size_t{508} << 20);
}

TEST(CpuCache, SysfsWithoutCachesSaysNothing) {
  TempDir temp;
  EXPECT_EQ(sysfs_last_level_cache_bytes(temp.path()), 0u);
  EXPECT_EQ(sysfs_last_level_cache_bytes(temp.path() / "missing"), 0u);
}

TEST(CpuCache, AVmsClaimIsCappedPerCpu) {
  const CacheSize capped = capped_cache_size(std::size_t{508} << 20, "sysfs", 2);
  EXPECT_EQ(capped.bytes, 2 * kCacheCeilingPerCpu);
  EXPECT_EQ(capped.source, "sysfs (capped from 508 MiB)");
  EXPECT_EQ(capped.reported, std::size_t{508} << 20);
  const CacheSize real = capped_cache_size(std::size_t{32} << 20, "cpuid", 2);
  EXPECT_EQ(real.bytes, std::size_t{32} << 20);
  EXPECT_EQ(real.source, "cpuid");
}

TEST(CpuCache, ThisMachinesCacheIsSane) {
  const CacheSize& cache = last_level_cache();
  EXPECT_GE(cache.bytes, std::size_t{256} << 10);
  EXPECT_LE(cache.bytes, kCacheCeilingPerCpu * 1024);
  EXPECT_FALSE(cache.source.empty());
#if defined(__x86_64__)
  // Where sysfs says nothing (some containers), cpuid is the fallback: it must give a size.
  EXPECT_GT(cpuid_last_level_cache_bytes(), 0u);
#endif
}

}  // namespace
}  // namespace kernelarc

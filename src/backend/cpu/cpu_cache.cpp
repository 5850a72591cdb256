#include "backend/cpu/cpu_cache.h"
#include "core/text.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kernelarc {
namespace {

// "32K", "2048K", "32M" as sysfs writes them.
std::size_t parse_cache_size(const std::string& text) {
  std::size_t value = 0;
  std::size_t i = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i)
    value = value * 10 + static_cast<std::size_t>(text[i] - '0');
  if (i < text.size() && text[i] == 'K') value <<= 10;
  if (i < text.size() && text[i] == 'M') value <<= 20;
  if (i < text.size() && text[i] == 'G') value <<= 30;
  return value;
}

int usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

std::size_t sysfs_last_level_cache_bytes(const std::filesystem::path& cache_dir) {
  std::size_t size = 0;
  int best_level = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir, error)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    const int level = std::atoi(read_first_line(entry.path() / "level").c_str());
    const std::size_t bytes = parse_cache_size(read_first_line(entry.path() / "size"));
    if (bytes > 0 && (level > best_level || (level == best_level && bytes > size))) {
      best_level = level;
      size = bytes;
    }
  }
  return size;
}

#if defined(__x86_64__) || defined(__i386__)
namespace {

/// The largest cache of the highest level in a deterministic cache-parameters leaf: 4 on Intel,
/// 0x8000001D on AMD (the same layout); 0 when the leaf lists none.
std::size_t cache_parameters_leaf_bytes(unsigned leaf) {
  std::size_t size = 0;
  int best_level = 0;
  for (unsigned subleaf = 0; subleaf < 16; ++subleaf) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __cpuid_count(leaf, subleaf, eax, ebx, ecx, edx);
    if ((eax & 0x1f) == 0) break;  // no more caches
    const int level = static_cast<int>((eax >> 5) & 0x7);
    const std::size_t ways = ((ebx >> 22) & 0x3ff) + 1;
    const std::size_t partitions = ((ebx >> 12) & 0x3ff) + 1;
    const std::size_t line = (ebx & 0xfff) + 1;
    const std::size_t bytes = ways * partitions * line * (std::size_t{ecx} + 1);
    if (level > best_level || (level == best_level && bytes > size)) {
      best_level = level;
      size = bytes;
    }
  }
  return size;
}

}  // namespace
#endif

std::size_t cpuid_last_level_cache_bytes() {
#if defined(__x86_64__) || defined(__i386__)
  if (__get_cpuid_max(0, nullptr) >= 4) {
    if (const std::size_t intel = cache_parameters_leaf_bytes(4)) return intel;
  }
  // AMD leaves leaf 4 empty: its cache topology is 0x8000001D, and older parts give only the L2
  // and L3 sizes in 0x80000006 (L3 in 512 KiB units in EDX[31:18], L2 in KiB in ECX[31:16]).
  const unsigned extended = __get_cpuid_max(0x80000000, nullptr);
  if (extended >= 0x8000001D) {
    if (const std::size_t amd = cache_parameters_leaf_bytes(0x8000001D)) return amd;
  }
  if (extended >= 0x80000006) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __cpuid(0x80000006, eax, ebx, ecx, edx);
    if (const std::size_t l3 = std::size_t{edx >> 18} * (512u << 10)) return l3;
    return std::size_t{ecx >> 16} << 10;
  }
#endif
  return 0;
}

CacheSize capped_cache_size(std::size_t reported, std::string source, int cpus) {
  const std::size_t ceiling = kCacheCeilingPerCpu * static_cast<std::size_t>(std::max(1, cpus));
  if (reported <= ceiling) return {reported, std::move(source), reported};
  return {ceiling, fmt::format("{} (capped from {} MiB)", source, reported >> 20), reported};
}

const CacheSize& last_level_cache() {
  static const CacheSize size = [] {
    const int cpus = usable_cpus();
    if (const std::size_t sysfs =
            sysfs_last_level_cache_bytes("/sys/devices/system/cpu/cpu0/cache"))
      return capped_cache_size(sysfs, "sysfs", cpus);
    if (const std::size_t cpuid = cpuid_last_level_cache_bytes())
      return capped_cache_size(cpuid, "cpuid", cpus);
    return CacheSize{std::size_t{32} << 20, "default", std::size_t{32} << 20};
  }();
  return size;
}

}  // namespace kernelarc

// The size of this CPU's last-level cache, for sizing cache flushes and calibration buffers.
// Virtual machines report what the host configured: a 2-core VM here claims a 508 MiB LLC, and a
// flush of twice that wrote 1 GiB before every timed PyTorch call. The size is read from sysfs,
// else from cpuid leaf 4, and capped per usable CPU.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace kernelarc {

/// No real CPU has more last-level cache per core than this (the largest, stacked-cache parts,
/// have about 12 MiB); a larger claim is a VM's, and is capped to this per usable CPU.
inline constexpr std::size_t kCacheCeilingPerCpu = std::size_t{32} << 20;

struct CacheSize {
  std::size_t bytes = 0;
  std::string source;  ///< "sysfs", "cpuid" or "default", with " (capped from N MiB)" when capped
  /// What the machine claims, uncapped: a buffer that must not fit in any cache (a bandwidth
  /// measurement) is sized from this, since a VM's claim may be the host's real cache.
  std::size_t reported = 0;
};

/// The largest highest-level cache under `cache_dir` (index*/level and index*/size, as in
/// /sys/devices/system/cpu/cpu0/cache); 0 when it says nothing.
std::size_t sysfs_last_level_cache_bytes(const std::filesystem::path& cache_dir);

/// The highest-level cache that cpuid describes (leaf 4 on Intel, 0x8000001D or 0x80000006 on
/// AMD); 0 off x86 or when no leaf says.
std::size_t cpuid_last_level_cache_bytes();

/// `reported` capped at kCacheCeilingPerCpu per CPU, with its source named.
CacheSize capped_cache_size(std::size_t reported, std::string source, int cpus);

/// This machine's: sysfs of cpu0, else cpuid, else 32 MiB, capped for the usable CPUs.
/// Computed once per process.
const CacheSize& last_level_cache();

}  // namespace kernelarc

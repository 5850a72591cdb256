// The oracle cache's size bound. Draws of large workloads take hundreds of MB each, and a bench
// over a suite prepares many problems: unbounded, the cache filled a 64 GiB disk mid-suite. Whole
// problem directories are dropped, least recently prepared first; they are remade on demand.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace kernelarc {

/// The bound when none is configured: a quarter of the file system holding `cache_dir`, at
/// least 4 GiB.
std::uintmax_t default_oracle_cache_bytes(const std::filesystem::path& cache_dir);

/// Marks a problem's cache directory as used now (what bound_oracle_cache ranks by).
void mark_oracle_cache_used(const std::filesystem::path& problem_dir);

/// Removes problem directories of `cache_dir` other than `keep`, least recently used first,
/// until the cache holds at most `max_bytes`; `keep` stays even when it alone is larger.
/// Returns the directories removed. A process reading a removed problem's entries at that moment
/// finds them missing and remakes them.
std::vector<std::filesystem::path> bound_oracle_cache(const std::filesystem::path& cache_dir,
                                                      const std::filesystem::path& keep,
                                                      std::uintmax_t max_bytes);

}  // namespace kernelarc

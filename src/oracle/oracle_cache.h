// The small files of the oracle cache besides the tensors: reference errors and baseline
// timings (JSON), each written atomically.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "oracle/oracle.h"

namespace kernelarc {

/// A problem name made safe as one directory name (anything but [A-Za-z0-9._-] becomes '_').
std::string cache_dir_name(std::string_view problem_name);

/// The torch seed of one (workload, trial): a hash of the base seed, the workload's uuid and the
/// trial, below 2^60 so every torch version accepts it.
uint64_t derive_seed(uint64_t base_seed, std::string_view workload_uuid, int trial);

/// The message of a cached reference error; nullopt if there is no such file. An unreadable
/// file is deleted and treated as absent.
std::optional<std::string> read_cached_error(const std::filesystem::path& path);
void write_cached_error(const std::filesystem::path& path, std::string_view workload_uuid,
                        int trial, std::string_view message);

/// A cached baseline: its timing, or why it is unavailable.
struct CachedTiming {
  std::optional<ReferenceTiming> timing;
  std::string unavailable;
};

/// Reads a timing file as written by python/kernelarc_oracle.py or write_cached_timing:
/// {"baseline", "times_ns", "note", "end_to_end_ns"?} or {"baseline", "unavailable"}. nullopt if absent; an
/// unreadable file is deleted and treated as absent.
std::optional<CachedTiming> read_cached_timing(const std::filesystem::path& path,
                                               Baseline baseline);
void write_cached_timing(const std::filesystem::path& path, Baseline baseline,
                         const CachedTiming& timing);

}  // namespace kernelarc

// Theoretical occupancy of a kernel launch, computed the way NVIDIA's occupancy calculator does
// from the per-SM limits of the architecture and the kernel's resources (as CUPTI reports them
// for whatever the candidate launched, so no function handle is needed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kernelarc {

struct KernelFootprint {
  int threads_per_block = 0;
  int registers_per_thread = 0;
  int64_t shared_bytes_per_block = 0;  ///< static + dynamic
};

/// Joins the resources that limit occupancy alike ("registers and shared memory").
inline constexpr const char* kOccupancyLimitJoin = " and ";

struct Occupancy {
  int blocks_per_sm = 0;
  double fraction = 0;  ///< active warps / maximum warps per SM
  /// "warps", "registers", "shared memory" or "blocks"; several joined by kOccupancyLimitJoin
  /// when each alone allows no more blocks (in that order).
  std::string limited_by;
};

/// nullopt for an architecture without a table ("sm_90", "sm_90a", "sm_80", "sm_86", "sm_89",
/// "sm_100" are known) or an empty launch. Thread-block clusters can lower the real figure.
std::optional<Occupancy> theoretical_occupancy(const std::string& arch,
                                               const KernelFootprint& kernel);

}  // namespace kernelarc

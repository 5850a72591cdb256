#include "eval/occupancy.h"

#include <algorithm>
#include <limits>

namespace kernelarc {

namespace {

struct SmLimits {
  int max_warps;
  int max_blocks;
  int registers;
  int64_t shared_bytes;
  int64_t reserved_shared_per_block;  ///< taken by the system from every block (CC >= 8.0)
};

constexpr int kWarpSize = 32;
constexpr int kRegisterAllocationUnit = 256;  // registers, per warp
constexpr int64_t kSharedAllocationUnit = 128;

/// Per-SM limits from the CUDA C++ Programming Guide's table of compute capabilities.
std::optional<SmLimits> limits_for(std::string arch) {
  if (!arch.empty() && arch.back() == 'a') arch.pop_back();
  if (arch == "sm_90" || arch == "sm_100") return SmLimits{64, 32, 65536, 233472, 1024};
  if (arch == "sm_80") return SmLimits{64, 32, 65536, 167936, 1024};
  if (arch == "sm_86") return SmLimits{48, 16, 65536, 102400, 1024};
  if (arch == "sm_89") return SmLimits{48, 24, 65536, 102400, 1024};
  return std::nullopt;
}

int64_t round_up(int64_t value, int64_t unit) {
  return (value + unit - 1) / unit * unit;
}

}  // namespace

std::optional<Occupancy> theoretical_occupancy(const std::string& arch,
                                               const KernelFootprint& kernel) {
  const auto limits = limits_for(arch);
  if (!limits || kernel.threads_per_block <= 0) return std::nullopt;
  const int warps_per_block = (kernel.threads_per_block + kWarpSize - 1) / kWarpSize;

  // Every resource that allows no more than the fewest blocks is named: lowering one of two that
  // bind alike (a warp-specialised kernel's registers and its shared-memory tiles) gains nothing.
  Occupancy result{limits->max_blocks, 0, "blocks"};
  auto limit = [&](int blocks, const char* reason) {
    if (blocks < result.blocks_per_sm) {
      result = {blocks, 0, reason};
    } else if (blocks == result.blocks_per_sm && result.limited_by != "blocks") {
      result.limited_by += std::string(kOccupancyLimitJoin) + reason;
    }
  };
  limit(limits->max_warps / warps_per_block, "warps");
  if (kernel.registers_per_thread > 0) {
    const int64_t per_warp =
        round_up(int64_t{kernel.registers_per_thread} * kWarpSize, kRegisterAllocationUnit);
    limit(static_cast<int>(limits->registers / per_warp) / warps_per_block, "registers");
  }
  const int64_t shared = round_up(kernel.shared_bytes_per_block, kSharedAllocationUnit) +
                         limits->reserved_shared_per_block;
  limit(static_cast<int>(limits->shared_bytes / shared), "shared memory");
  result.fraction = static_cast<double>(result.blocks_per_sm * warps_per_block) /
                    static_cast<double>(limits->max_warps);
  return result;
}

}  // namespace kernelarc

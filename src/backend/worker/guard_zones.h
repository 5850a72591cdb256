// Guard bytes around every buffer a call gets: filled with a pattern before the call, checked
// after it. A write just past the end (or just before the start) of an output, an input or the
// workspace is an out-of-bounds write the candidate got away with only by luck; on the GPU it
// lands silently in a neighbouring allocation.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "backend/device.h"

namespace kernelarc {

/// Bytes guarded on each side of a buffer; buffers are allocated with this much room around.
inline constexpr std::size_t kGuardZoneBytes = 256;

struct GuardedBuffer {
  std::string what;  ///< "output 'y'", "the workspace"
  std::byte* data = nullptr;
  std::size_t bytes = 0;
};

/// Fills the guard bytes before and after each buffer.
void arm_guard_zones(Device& device, const std::vector<GuardedBuffer>& buffers);

/// Empty when every guard byte is intact; otherwise which buffer was overrun, on which side and
/// how many guard bytes changed. Call after the device finished the call.
std::string breached_guard_zone(Device& device, const std::vector<GuardedBuffer>& buffers);

}  // namespace kernelarc

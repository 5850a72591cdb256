#include "backend/worker/guard_zones.h"

#include <array>
#include <cstdint>

#include <fmt/format.h>

namespace kernelarc {
namespace {

// Not a value a kernel writes by accident (0, ~0, NaN patterns), so a changed byte means a write.
constexpr uint8_t kGuardByte = 0xA5;

std::size_t changed_bytes(Device& device, const std::byte* zone) {
  std::array<uint8_t, kGuardZoneBytes> copy{};
  device.copy_to_host(copy.data(), zone, copy.size());
  std::size_t changed = 0;
  for (uint8_t byte : copy) changed += byte != kGuardByte;
  return changed;
}

}  // namespace

void arm_guard_zones(Device& device, const std::vector<GuardedBuffer>& buffers) {
  const std::array<uint8_t, 1> pattern{kGuardByte};
  for (const GuardedBuffer& buffer : buffers) {
    device.fill_pattern(buffer.data - kGuardZoneBytes, kGuardZoneBytes, pattern);
    device.fill_pattern(buffer.data + buffer.bytes, kGuardZoneBytes, pattern);
  }
}

std::string breached_guard_zone(Device& device, const std::vector<GuardedBuffer>& buffers) {
  for (const GuardedBuffer& buffer : buffers) {
    if (std::size_t changed = changed_bytes(device, buffer.data + buffer.bytes)) {
      return fmt::format("the call wrote past the end of {} ({} of the {} bytes after it changed)",
                         buffer.what, changed, kGuardZoneBytes);
    }
    if (std::size_t changed = changed_bytes(device, buffer.data - kGuardZoneBytes)) {
      return fmt::format(
          "the call wrote before the start of {} ({} of the {} bytes before it changed)",
          buffer.what, changed, kGuardZoneBytes);
    }
  }
  return {};
}

}  // namespace kernelarc

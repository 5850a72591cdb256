#include "backend/input_perturbation.h"

#include <cstdint>
#include <cstring>

namespace kernelarc {
namespace {

/// The element's bits with the lowest one flipped, or false when that would make a zero
/// non-zero or touch an infinity or NaN (or, for float8 e4m3fn, turn 0x7E into NaN).
bool flipped(uint64_t bits, DType dtype, uint64_t& out) {
  uint64_t exponent_mask = 0, magnitude_mask = 0;
  switch (dtype) {
    case DType::Float64:
      exponent_mask = 0x7FF0000000000000ull;
      magnitude_mask = 0x7FFFFFFFFFFFFFFFull;
      break;
    case DType::Float32:
      exponent_mask = 0x7F800000u;
      magnitude_mask = 0x7FFFFFFFu;
      break;
    case DType::Float16:
      exponent_mask = 0x7C00u;
      magnitude_mask = 0x7FFFu;
      break;
    case DType::BFloat16:
      exponent_mask = 0x7F80u;
      magnitude_mask = 0x7FFFu;
      break;
    case DType::Float8E5M2:
      exponent_mask = 0x7Cu;
      magnitude_mask = 0x7Fu;
      break;
    case DType::Float8E4M3FN:
      // No infinities; only 0x7F / 0xFF are NaN.
      if ((bits & 0x7Fu) == 0 || (bits & 0x7Fu) >= 0x7Eu) return false;
      out = bits ^ 1u;
      return true;
    default:
      return false;
  }
  if ((bits & magnitude_mask) == 0 || (bits & exponent_mask) == exponent_mask) return false;
  out = bits ^ 1u;
  return true;
}

}  // namespace

void perturb_input(Device& device, std::byte* device_data, const std::byte* pristine, DType dtype,
                   std::size_t numel, Rng& rng) {
  if (!dtype_is_floating(dtype) || numel < 2) return;
  const std::size_t size = dtype_size(dtype);
  for (int i = 0; i < kPerturbedElements; ++i) {
    const std::size_t index = rng.below(numel);
    uint64_t bits = 0, changed = 0;
    std::memcpy(&bits, pristine + index * size, size);  // little-endian hosts
    if (!flipped(bits, dtype, changed)) continue;
    device.copy_from_host(device_data + index * size, &changed, size);
  }
}

}  // namespace kernelarc

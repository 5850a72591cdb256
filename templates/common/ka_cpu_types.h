// The 16-bit float types for CPU templates: ka_bf16 and ka_f16 hold the bits of a bfloat16 /
// IEEE half, and ka_to_float / ka_from_float<T> convert them with PyTorch's algorithms
// (round-to-nearest-even, bit for bit the results of tensor.to(dtype)). ka_to_float also takes
// float, double, int32_t and int64_t (scalar inputs).
//
//   float f = ka_to_float(p[i]);         // p: const ka_bf16*, const ka_f16* or const float*
//   q[i] = ka_from_float<ka_f16>(f);
#ifndef KA_CPU_TYPES_H
#define KA_CPU_TYPES_H

#include <cstdint>
#include <cstring>

struct ka_bf16 {
  uint16_t bits;
};
struct ka_f16 {
  uint16_t bits;
};

namespace ka_detail {

inline uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace ka_detail

inline float ka_to_float(float x) {
  return x;
}
inline float ka_to_float(double x) {
  return static_cast<float>(x);
}
inline float ka_to_float(int32_t x) {
  return static_cast<float>(x);
}
inline float ka_to_float(int64_t x) {
  return static_cast<float>(x);
}

inline float ka_to_float(ka_bf16 x) {
  return ka_detail::bits_float(static_cast<uint32_t>(x.bits) << 16);
}

// c10::detail::fp16_ieee_to_fp32_value: exact, subnormals through a magic-number subtraction.
inline float ka_to_float(ka_f16 x) {
  using ka_detail::bits_float;
  using ka_detail::float_bits;
  const uint32_t w = static_cast<uint32_t>(x.bits) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const float normalized = bits_float((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = bits_float((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t magnitude = two_w < (1u << 27) ? float_bits(denormalized) : float_bits(normalized);
  return bits_float(sign | magnitude);
}

template <typename T>
T ka_from_float(float x);

template <>
inline float ka_from_float<float>(float x) {
  return x;
}

// c10::detail::round_to_nearest_even; every NaN becomes the canonical quiet NaN, as in PyTorch.
template <>
inline ka_bf16 ka_from_float<ka_bf16>(float x) {
  if (x != x) return ka_bf16{0x7FC0};
  const uint32_t bits = ka_detail::float_bits(x);
  const uint32_t rounding_bias = ((bits >> 16) & 1) + 0x7FFF;
  return ka_bf16{static_cast<uint16_t>((bits + rounding_bias) >> 16)};
}

// c10::detail::fp16_ieee_from_fp32_value: the scaling lets the FPU round to nearest even.
template <>
inline ka_f16 ka_from_float<ka_f16>(float x) {
  using ka_detail::bits_float;
  using ka_detail::float_bits;
  const float magnitude = x < 0 ? -x : x;
  float base = (magnitude * 0x1.0p+112f) * 0x1.0p-110f;
  const uint32_t w = float_bits(x);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = bits_float((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = float_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return ka_f16{static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign))};
}

#endif  // KA_CPU_TYPES_H

#include "core/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::string_view safetensors_name;
  std::size_t size;  ///< bytes per element; a float4 element is a byte of two values
  bool floating;
  bool packed;
};

// float4_e2m1fn_x2 comes before float4_e2m1 so that "F4" reads back as the name torch and
// safetensors use; SOL-ExecBench maps both definition names onto torch.float4_e2m1fn_x2.
constexpr std::array<DTypeInfo, 14> kDTypes = {{
    {DType::Float64, "float64", "F64", 8, true, false},
    {DType::Float32, "float32", "F32", 4, true, false},
    {DType::Float16, "float16", "F16", 2, true, false},
    {DType::BFloat16, "bfloat16", "BF16", 2, true, false},
    {DType::Float8E4M3FN, "float8_e4m3fn", "F8_E4M3", 1, true, false},
    {DType::Float8E5M2, "float8_e5m2", "F8_E5M2", 1, true, false},
    {DType::Int8, "int8", "I8", 1, false, false},
    {DType::Int16, "int16", "I16", 2, false, false},
    {DType::Int32, "int32", "I32", 4, false, false},
    {DType::Int64, "int64", "I64", 8, false, false},
    {DType::UInt8, "uint8", "U8", 1, false, false},
    {DType::Bool, "bool", "BOOL", 1, false, false},
    {DType::Float4E2M1FNx2, "float4_e2m1fn_x2", "F4", 1, true, true},
    {DType::Float4E2M1, "float4_e2m1", "F4", 1, true, true},
}};

const DTypeInfo& info(DType dtype) {
  for (const auto& entry : kDTypes) {
    if (entry.dtype == dtype) return entry;
  }
  return kDTypes[1];  // unreachable for a valid enumerator
}

// One element (a byte) holds two values, so no single double stands for it.
[[noreturn]] void throw_packed(DType dtype) {
  throw InputError(fmt::format(
      "{} packs two values per byte; its elements cannot be read or written one value at a "
      "time (only drawn as whole tensors, stored and passed to kernels)",
      info(dtype).name));
}

uint32_t float_bits(float value) {
  return std::bit_cast<uint32_t>(value);
}
float bits_float(uint32_t bits) {
  return std::bit_cast<float>(bits);
}

// Truncates toward zero and wraps modulo 2^64, so every double has a defined integer image
// (a plain cast is undefined out of range).
uint64_t double_to_wrapped(double value) {
  if (std::isnan(value)) return 0;
  const double truncated = std::trunc(value);
  constexpr double kTwo63 = 9223372036854775808.0;
  constexpr double kTwo64 = 18446744073709551616.0;
  if (truncated >= -kTwo63 && truncated < kTwo63) {
    return static_cast<uint64_t>(static_cast<int64_t>(truncated));
  }
  if (std::isinf(truncated)) return 0;
  double wrapped = std::fmod(truncated, kTwo64);
  if (wrapped >= kTwo63) wrapped -= kTwo64;
  if (wrapped < -kTwo63) wrapped += kTwo64;
  return static_cast<uint64_t>(static_cast<int64_t>(wrapped));
}

template <typename T>
T load_as(const void* element) {
  T value;
  std::memcpy(&value, element, sizeof(T));
  return value;
}

template <typename T>
void store_as(void* element, T value) {
  std::memcpy(element, &value, sizeof(T));
}

}  // namespace

std::string_view dtype_name(DType dtype) {
  return info(dtype).name;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& entry : kDTypes) {
    if (entry.name == name) return entry.dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_abi(int value) {
  for (const DTypeInfo& entry : kDTypes)
    if (static_cast<int>(entry.dtype) == value) return entry.dtype;
  return std::nullopt;
}

std::string_view dtype_safetensors_name(DType dtype) {
  return info(dtype).safetensors_name;
}

std::optional<DType> dtype_from_safetensors_name(std::string_view name) {
  for (const auto& entry : kDTypes) {
    if (!entry.safetensors_name.empty() && entry.safetensors_name == name) return entry.dtype;
  }
  return std::nullopt;
}

std::string_view dtype_accepted_names() {
  return "float64, float32, float16, bfloat16, float8_e4m3fn, float8_e5m2, float4_e2m1, "
         "float4_e2m1fn_x2, int8, int16, int32, int64, uint8, bool";
}

bool dtype_is_packed(DType dtype) {
  return info(dtype).packed;
}

bool dtype_same_storage(DType a, DType b) {
  return a == b || (dtype_is_packed(a) && dtype_is_packed(b));
}

std::size_t dtype_size(DType dtype) {
  return info(dtype).size;
}
bool dtype_is_floating(DType dtype) {
  return info(dtype).floating;
}

float bf16_to_float(uint16_t bits) {
  return bits_float(static_cast<uint32_t>(bits) << 16);
}

// c10::detail::round_to_nearest_even.
uint16_t float_to_bf16(float value) {
  if (std::isnan(value)) return 0x7FC0;
  const uint32_t bits = float_bits(value);
  const uint32_t rounding_bias = ((bits >> 16) & 1) + 0x7FFF;
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

// c10::detail::fp16_ieee_to_fp32_value (from the FP16 library): exact, NaN payloads kept.
float fp16_to_float(uint16_t bits) {
  const uint32_t w = static_cast<uint32_t>(bits) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  constexpr uint32_t kExpOffset = 0xE0u << 23;
  constexpr float kExpScale = 0x1.0p-112f;
  const float normalized = bits_float((two_w >> 4) + kExpOffset) * kExpScale;
  constexpr uint32_t kMagicMask = 126u << 23;
  constexpr float kMagicBias = 0.5f;
  const float denormalized = bits_float((two_w >> 17) | kMagicMask) - kMagicBias;
  constexpr uint32_t kDenormalizedCutoff = 1u << 27;
  return bits_float(
      sign | (two_w < kDenormalizedCutoff ? float_bits(denormalized) : float_bits(normalized)));
}

// c10::detail::fp16_ieee_from_fp32_value: the scaling lets the FPU do the round-to-nearest-even.
uint16_t float_to_fp16(float value) {
  constexpr float kScaleToInf = 0x1.0p+112f;
  constexpr float kScaleToZero = 0x1.0p-110f;
  float base = (std::fabs(value) * kScaleToInf) * kScaleToZero;
  const uint32_t w = float_bits(value);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = bits_float((bias >> 1) + 0x07800000u) + base;
  const uint32_t bits = float_bits(base);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

// c10::detail::fp8e4m3fn_to_fp32_value.
float fp8_e4m3fn_to_float(uint8_t bits) {
  const uint32_t w = static_cast<uint32_t>(bits) << 24;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t nonsign = w & 0x7FFFFFFFu;
  uint32_t renorm_shift = static_cast<uint32_t>(std::countl_zero(nonsign));
  renorm_shift = renorm_shift > 4 ? renorm_shift - 4 : 0;
  const int32_t inf_nan_mask =
      (static_cast<int32_t>(nonsign + 0x01000000u) >> 8) & static_cast<int32_t>(0x7F800000);
  const int32_t zero_mask = static_cast<int32_t>(nonsign - 1) >> 31;
  const uint32_t result =
      sign | ((((nonsign << renorm_shift >> 4) + ((0x78 - renorm_shift) << 23)) |
               static_cast<uint32_t>(inf_nan_mask)) &
              ~static_cast<uint32_t>(zero_mask));
  return bits_float(result);
}

// c10::detail::fp8e4m3fn_from_fp32_value: |x| >= 480 (the first value that would round past
// 448) and NaN/inf become 0x7F with the sign kept.
uint8_t float_to_fp8_e4m3fn(float value) {
  constexpr uint32_t kFp8Max = 1087u << 20;
  constexpr uint32_t kDenormMask = 141u << 23;
  uint32_t f_bits = float_bits(value);
  const uint32_t sign = f_bits & 0x80000000u;
  f_bits ^= sign;
  uint8_t result = 0;
  if (f_bits >= kFp8Max) {
    result = 0x7F;
  } else if (f_bits < (121u << 23)) {
    // Below the smallest normal (2^-6): adding 2^14, whose float ulp is 2^-9 (the subnormal
    // step), lets the FPU do the rounding.
    f_bits = float_bits(bits_float(f_bits) + bits_float(kDenormMask));
    result = static_cast<uint8_t>(f_bits - kDenormMask);
  } else {
    const uint32_t mant_odd = (f_bits >> 20) & 1;
    f_bits += (static_cast<uint32_t>(7 - 127) << 23) + 0x7FFFF;
    f_bits += mant_odd;
    result = static_cast<uint8_t>(f_bits >> 20);
  }
  return static_cast<uint8_t>(result | (sign >> 24));
}

// c10::detail::fp8e5m2_to_fp32_value: e5m2 is the upper byte of an fp16.
float fp8_e5m2_to_float(uint8_t bits) {
  return fp16_to_float(static_cast<uint16_t>(static_cast<uint16_t>(bits) << 8));
}

// c10::detail::fp8e5m2_from_fp32_value.
uint8_t float_to_fp8_e5m2(float value) {
  constexpr uint32_t kFp32Inf = 255u << 23;
  constexpr uint32_t kFp8Max = 143u << 23;
  constexpr uint32_t kDenormMask = 134u << 23;
  uint32_t f_bits = float_bits(value);
  const uint32_t sign = f_bits & 0x80000000u;
  f_bits ^= sign;
  uint8_t result = 0;
  if (f_bits >= kFp8Max) {
    result = f_bits > kFp32Inf ? 0x7F : 0x7C;
  } else if (f_bits < (113u << 23)) {
    // Below 2^-14: adding 2^7, whose float ulp is 2^-16 (the subnormal step), rounds in the FPU.
    f_bits = float_bits(bits_float(f_bits) + bits_float(kDenormMask));
    result = static_cast<uint8_t>(f_bits - kDenormMask);
  } else {
    const uint32_t mant_odd = (f_bits >> 21) & 1;
    f_bits += (static_cast<uint32_t>(15 - 127) << 23) + 0xFFFFF;
    f_bits += mant_odd;
    result = static_cast<uint8_t>(f_bits >> 21);
  }
  return static_cast<uint8_t>(result | (sign >> 24));
}

namespace {

// E2M1 magnitudes by their three low bits: 0, 0.5, 1, 1.5, 2, 3, 4, 6.
constexpr std::array<float, 8> kE2M1Magnitudes = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

}  // namespace

float e2m1_to_float(uint8_t code) {
  const float magnitude = kE2M1Magnitudes[code & 7];
  return (code & 8) != 0 ? -magnitude : magnitude;
}

// SOL-ExecBench's _cast_to_fp4x2: the nearest magnitude, ties to the even code (0.25 -> 0,
// 0.75 -> 1, 2.5 -> 2, 5 -> 4), saturating beyond 6; a small negative becomes -0 (code 8) and
// NaN becomes 0, since its ranges test x < 0 and match no NaN.
uint8_t float_to_e2m1(float value) {
  if (std::isnan(value)) return 0;
  const uint8_t sign = value < 0.0f ? 8 : 0;
  const float magnitude = std::fabs(value);
  uint8_t code = 7;
  for (uint8_t candidate = 0; candidate < 7; ++candidate) {
    const float midpoint = 0.5f * (kE2M1Magnitudes[candidate] + kE2M1Magnitudes[candidate + 1]);
    if (magnitude < midpoint || (magnitude == midpoint && candidate % 2 == 0)) {
      code = candidate;
      break;
    }
  }
  return static_cast<uint8_t>(sign | code);
}

double load_element(DType dtype, const void* element) {
  switch (dtype) {
    case DType::Float64:
      return load_as<double>(element);
    case DType::Float32:
      return load_as<float>(element);
    case DType::Float16:
      return fp16_to_float(load_as<uint16_t>(element));
    case DType::BFloat16:
      return bf16_to_float(load_as<uint16_t>(element));
    case DType::Float8E4M3FN:
      return fp8_e4m3fn_to_float(load_as<uint8_t>(element));
    case DType::Float8E5M2:
      return fp8_e5m2_to_float(load_as<uint8_t>(element));
    case DType::Int8:
      return load_as<int8_t>(element);
    case DType::Int16:
      return load_as<int16_t>(element);
    case DType::Int32:
      return load_as<int32_t>(element);
    case DType::Int64:
      return static_cast<double>(load_as<int64_t>(element));
    case DType::UInt8:
      return load_as<uint8_t>(element);
    case DType::Bool:
      return load_as<uint8_t>(element) != 0 ? 1.0 : 0.0;
    case DType::Float4E2M1:
    case DType::Float4E2M1FNx2:
      throw_packed(dtype);
  }
  return 0;
}

namespace {

template <typename T, typename Convert>
void load_all(const void* first, int64_t count, double* out, Convert convert) {
  const auto* bytes = static_cast<const unsigned char*>(first);
  for (int64_t i = 0; i < count; ++i) out[i] = convert(load_as<T>(bytes + i * sizeof(T)));
}

}  // namespace

void load_elements(DType dtype, const void* first, int64_t count, double* out) {
  auto same = [](auto value) { return static_cast<double>(value); };
  switch (dtype) {
    case DType::Float64:
      return load_all<double>(first, count, out, same);
    case DType::Float32:
      return load_all<float>(first, count, out, same);
    case DType::Float16:
      return load_all<uint16_t>(first, count, out, fp16_to_float);
    case DType::BFloat16:
      return load_all<uint16_t>(first, count, out, bf16_to_float);
    case DType::Float8E4M3FN:
      return load_all<uint8_t>(first, count, out, fp8_e4m3fn_to_float);
    case DType::Float8E5M2:
      return load_all<uint8_t>(first, count, out, fp8_e5m2_to_float);
    case DType::Int8:
      return load_all<int8_t>(first, count, out, same);
    case DType::Int16:
      return load_all<int16_t>(first, count, out, same);
    case DType::Int32:
      return load_all<int32_t>(first, count, out, same);
    case DType::Int64:
      return load_all<int64_t>(first, count, out, same);
    case DType::UInt8:
      return load_all<uint8_t>(first, count, out, same);
    case DType::Bool:
      return load_all<uint8_t>(first, count, out, [](uint8_t v) { return v != 0 ? 1.0 : 0.0; });
    case DType::Float4E2M1:
    case DType::Float4E2M1FNx2:
      throw_packed(dtype);
  }
}

void store_element(DType dtype, void* element, double value) {
  // Floats narrower than float32 go through float32, as PyTorch's casts from float64 do.
  switch (dtype) {
    case DType::Float64:
      store_as<double>(element, value);
      return;
    case DType::Float32:
      store_as<float>(element, static_cast<float>(value));
      return;
    case DType::Float16:
      store_as<uint16_t>(element, float_to_fp16(static_cast<float>(value)));
      return;
    case DType::BFloat16:
      store_as<uint16_t>(element, float_to_bf16(static_cast<float>(value)));
      return;
    case DType::Float8E4M3FN:
      store_as<uint8_t>(element, float_to_fp8_e4m3fn(static_cast<float>(value)));
      return;
    case DType::Float8E5M2:
      store_as<uint8_t>(element, float_to_fp8_e5m2(static_cast<float>(value)));
      return;
    case DType::Int8:
      store_as<uint8_t>(element, static_cast<uint8_t>(double_to_wrapped(value)));
      return;
    case DType::Int16:
      store_as<uint16_t>(element, static_cast<uint16_t>(double_to_wrapped(value)));
      return;
    case DType::Int32:
      store_as<uint32_t>(element, static_cast<uint32_t>(double_to_wrapped(value)));
      return;
    case DType::Int64:
      store_as<uint64_t>(element, double_to_wrapped(value));
      return;
    case DType::UInt8:
      store_as<uint8_t>(element, static_cast<uint8_t>(double_to_wrapped(value)));
      return;
    case DType::Bool:
      store_as<uint8_t>(element, value != 0 ? 1 : 0);
      return;
    case DType::Float4E2M1:
    case DType::Float4E2M1FNx2:
      throw_packed(dtype);
  }
}

}  // namespace kernelarc

// Element types and their conversions.
//
// The low-precision formats (bf16, fp16, fp8 e4m3fn, fp8 e5m2) are converted in software with
// round-to-nearest-even, matching PyTorch's casts bit for bit, so the guard can compare and
// generate tensors without a GPU or a compiler extension.
//
// The float4 types hold two E2M1 values per byte, the first in the low nibble, as torch's
// float4_e2m1fn_x2 does: an element is the byte, and a shape counts bytes (torch's shape), so
// allocating, storing and passing such a tensor works like a one-byte type. A single value has
// no byte of its own, so the element accessors refuse them with an InputError; comparing an
// output of these types is refused the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernelarc/abi.h"

namespace kernelarc {

enum class DType : int {
  Float64 = KA_FLOAT64,
  Float32 = KA_FLOAT32,
  Float16 = KA_FLOAT16,
  BFloat16 = KA_BFLOAT16,
  Float8E4M3FN = KA_FLOAT8_E4M3FN,
  Float8E5M2 = KA_FLOAT8_E5M2,
  Int8 = KA_INT8,
  Int16 = KA_INT16,
  Int32 = KA_INT32,
  Int64 = KA_INT64,
  UInt8 = KA_UINT8,
  Bool = KA_BOOL,
  Float4E2M1 = KA_FLOAT4_E2M1,
  Float4E2M1FNx2 = KA_FLOAT4_E2M1FN_X2,
};

/// Name as written in definition.json ("bfloat16", "float8_e4m3fn", "bool", ...).
std::string_view dtype_name(DType dtype);
/// Inverse of dtype_name; nullopt for an unknown name.
std::optional<DType> dtype_from_name(std::string_view name);
/// The DType of a ka_dtype value (the ABI's number); nullopt for a number no type has.
std::optional<DType> dtype_from_abi(int value);
/// Name in a safetensors header ("BF16", "F8_E4M3", ...); "F4" for both float4 types, whose
/// header shape counts values (the last dimension twice the byte count, as safetensors writes
/// torch.float4_e2m1fn_x2).
std::string_view dtype_safetensors_name(DType dtype);
std::optional<DType> dtype_from_safetensors_name(std::string_view name);
/// The comma-separated list of accepted definition.json names, for error messages.
std::string_view dtype_accepted_names();

/// True for the float4 types, whose one-byte elements each pack two values.
bool dtype_is_packed(DType dtype);
/// Same bytes for the same values: equal types, or the two float4 names (SOL-ExecBench reads
/// both as torch.float4_e2m1fn_x2, and a safetensors file calls both "F4").
bool dtype_same_storage(DType a, DType b);
/// Bytes per element (1 for the float4 types: a byte of two values).
std::size_t dtype_size(DType dtype);
bool dtype_is_floating(DType dtype);

float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);
float fp16_to_float(uint16_t bits);
uint16_t float_to_fp16(float value);
/// e4m3fn has no infinities: like PyTorch, values beyond +-448 become NaN.
float fp8_e4m3fn_to_float(uint8_t bits);
uint8_t float_to_fp8_e4m3fn(float value);
/// e5m2 has infinities: values beyond +-57344 become +-inf.
float fp8_e5m2_to_float(uint8_t bits);
uint8_t float_to_fp8_e5m2(float value);

/// E2M1 (a 4-bit code: sign, 2 exponent bits, 1 mantissa bit) to float, and back with
/// round-to-nearest-even in code space and saturation at +-6, as SOL-ExecBench quantises.
float e2m1_to_float(uint8_t code);
uint8_t float_to_e2m1(float value);

/// Reads one element of the given type as a double (exact for every type but int64 beyond 2^53).
/// The element accessors refuse the packed types as dtype_size does.
double load_element(DType dtype, const void* element);
/// Reads `count` consecutive elements as doubles into `out`: load_element in a loop, with the
/// type resolved once (the comparisons of large outputs are bound by this conversion).
void load_elements(DType dtype, const void* first, int64_t count, double* out);
/// Writes one element, converting (round-to-nearest-even for floats, truncation toward zero and
/// wrap-around for integers, != 0 for bool).
void store_element(DType dtype, void* element, double value);

}  // namespace kernelarc

#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "test_support.h"

namespace kernelarc {
namespace {

using testing::input_error_of;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(DType, NamesRoundTrip) {
  for (int value = KA_FLOAT64; value <= KA_BOOL; ++value) {
    const auto dtype = static_cast<DType>(value);
    EXPECT_EQ(dtype_from_name(dtype_name(dtype)), dtype);
    EXPECT_EQ(dtype_from_safetensors_name(dtype_safetensors_name(dtype)), dtype);
    EXPECT_NE(dtype_accepted_names().find(dtype_name(dtype)), std::string_view::npos);
  }
  EXPECT_EQ(dtype_name(DType::Float8E4M3FN), "float8_e4m3fn");
  EXPECT_EQ(dtype_safetensors_name(DType::Float8E4M3FN), "F8_E4M3");
  EXPECT_EQ(dtype_safetensors_name(DType::BFloat16), "BF16");
  EXPECT_EQ(dtype_from_name("f32"), std::nullopt);
  EXPECT_EQ(dtype_from_safetensors_name("F8_E8M0"), std::nullopt);
  EXPECT_EQ(dtype_size(DType::Float64), 8u);
  EXPECT_EQ(dtype_size(DType::BFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::Bool), 1u);
  EXPECT_TRUE(dtype_is_floating(DType::Float8E5M2));
  EXPECT_FALSE(dtype_is_floating(DType::UInt8));
}

TEST(DType, Float4IsAByteOfTwoValues) {
  const std::string fn_x2_message =
      "float4_e2m1fn_x2 packs two values per byte; its elements cannot be read or written one "
      "value at a time (only drawn as whole tensors, stored and passed to kernels)";
  for (const DType dtype : {DType::Float4E2M1, DType::Float4E2M1FNx2}) {
    EXPECT_EQ(dtype_from_name(dtype_name(dtype)), dtype);
    EXPECT_NE(dtype_accepted_names().find(dtype_name(dtype)), std::string_view::npos);
    EXPECT_TRUE(dtype_is_packed(dtype));
    EXPECT_TRUE(dtype_is_floating(dtype));
    EXPECT_EQ(dtype_size(dtype), 1u);  // torch's shape: one element per byte
    EXPECT_EQ(dtype_safetensors_name(dtype), "F4");
    EXPECT_TRUE(dtype_same_storage(dtype, DType::Float4E2M1FNx2));
    EXPECT_FALSE(dtype_same_storage(dtype, DType::UInt8));
    uint8_t byte = 0x21;
    double value = 0;
    const std::string message = input_error_of([&] { load_element(dtype, &byte); });
    EXPECT_NE(message.find(std::string(dtype_name(dtype)) + " packs two values per byte"),
              std::string::npos)
        << message;
    EXPECT_EQ(input_error_of([&] { load_elements(dtype, &byte, 1, &value); }), message);
    EXPECT_EQ(input_error_of([&] { store_element(dtype, &byte, 1.0); }), message);
    EXPECT_EQ(byte, 0x21);
  }
  EXPECT_EQ(input_error_of([&] {
              uint8_t byte = 0;
              load_element(DType::Float4E2M1FNx2, &byte);
            }),
            fn_x2_message);
  // Both names are stored as F4, which reads back as torch's name.
  EXPECT_EQ(dtype_from_safetensors_name("F4"), DType::Float4E2M1FNx2);
  EXPECT_EQ(dtype_name(DType::Float4E2M1), "float4_e2m1");
  EXPECT_EQ(dtype_name(DType::Float4E2M1FNx2), "float4_e2m1fn_x2");
  EXPECT_FALSE(dtype_is_packed(DType::Float8E4M3FN));
  EXPECT_FALSE(dtype_same_storage(DType::Float8E4M3FN, DType::UInt8));
  EXPECT_TRUE(dtype_same_storage(DType::BFloat16, DType::BFloat16));
  EXPECT_EQ(dtype_from_safetensors_name(""), std::nullopt);
}

TEST(DType, E2M1CodesAndSolExecBenchRounding) {
  const float magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint8_t code = 0; code < 16; ++code) {
    const float expected = code < 8 ? magnitudes[code] : -magnitudes[code - 8];
    EXPECT_EQ(e2m1_to_float(code), expected) << int(code);
    EXPECT_EQ(std::signbit(e2m1_to_float(code)), code >= 8) << int(code);
    if (code != 8) EXPECT_EQ(float_to_e2m1(expected), code) << int(code);  // -0 reads as 0
  }
  // Ties go to the even code, as SOL-ExecBench's _cast_to_fp4x2 ranges put them.
  EXPECT_EQ(float_to_e2m1(0.25f), 0);
  EXPECT_EQ(float_to_e2m1(0.2501f), 1);
  EXPECT_EQ(float_to_e2m1(0.75f), 2);
  EXPECT_EQ(float_to_e2m1(1.25f), 2);
  EXPECT_EQ(float_to_e2m1(1.75f), 4);
  EXPECT_EQ(float_to_e2m1(2.5f), 4);
  EXPECT_EQ(float_to_e2m1(3.5f), 6);
  EXPECT_EQ(float_to_e2m1(5.0f), 6);
  EXPECT_EQ(float_to_e2m1(5.01f), 7);
  EXPECT_EQ(float_to_e2m1(1000.0f), 7);  // saturates
  EXPECT_EQ(float_to_e2m1(kInf), 7);
  EXPECT_EQ(float_to_e2m1(-0.1f), 8);  // a small negative is -0
  EXPECT_EQ(float_to_e2m1(-0.0f), 0);  // x >= 0 holds for -0.0
  EXPECT_EQ(float_to_e2m1(-1.75f), 12);
  EXPECT_EQ(float_to_e2m1(-7.0f), 15);
  EXPECT_EQ(float_to_e2m1(kNaN), 0);
}

TEST(DType, BFloat16KnownBits) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(float_to_bf16(1.0f / 3.0f), 0x3EAB);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3F80);      // tie to even (down)
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);  // tie to even (up)
  EXPECT_EQ(float_to_bf16(kInf), 0x7F80);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16(0x1.fffffep127f), 0x7F80);  // rounds past the max to inf
  EXPECT_EQ(float_to_bf16(0x1p-133f), 0x0001);        // smallest subnormal
  EXPECT_EQ(float_to_bf16(kNaN), 0x7FC0);
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_float(0xC000), -2.0f);
  EXPECT_TRUE(std::isnan(bf16_to_float(0x7FC1)));
}

TEST(DType, Float16KnownBits) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);  // tie between 65504 (odd) and inf: to even
  EXPECT_EQ(float_to_fp16(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(float_to_fp16(0x1p-24f), 0x0001);
  EXPECT_EQ(float_to_fp16(0x1p-25f), 0x0000);         // tie to even (zero)
  EXPECT_EQ(float_to_fp16(3 * 0x1p-25f), 0x0002);     // tie to even (up)
  EXPECT_EQ(float_to_fp16(0x1p-14f), 0x0400);         // smallest normal
  EXPECT_EQ(float_to_fp16(1.0f + 0x1p-11f), 0x3C00);  // tie to even (down)
  EXPECT_EQ(float_to_fp16(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(float_to_fp16(-kInf), 0xFC00);
  EXPECT_EQ(float_to_fp16(kNaN), 0x7E00);
  EXPECT_EQ(float_to_fp16(-kNaN), 0xFE00);
  EXPECT_EQ(fp16_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(fp16_to_float(0x8000), -0.0f);
  EXPECT_TRUE(std::signbit(fp16_to_float(0x8000)));
  EXPECT_EQ(fp16_to_float(0x7C00), kInf);
  EXPECT_TRUE(std::isnan(fp16_to_float(0x7E00)));
}

TEST(DType, Float8E4M3FNKnownBits) {
  EXPECT_EQ(float_to_fp8_e4m3fn(448.0f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3fn(-448.0f), 0xFE);
  EXPECT_EQ(float_to_fp8_e4m3fn(464.0f), 0x7E);  // tie rounds to the even 448
  EXPECT_EQ(float_to_fp8_e4m3fn(470.0f), 0x7F);  // rounds past 448: NaN
  EXPECT_EQ(float_to_fp8_e4m3fn(500.0f), 0x7F);
  EXPECT_EQ(float_to_fp8_e4m3fn(-500.0f), 0xFF);  // sign kept
  EXPECT_EQ(float_to_fp8_e4m3fn(kInf), 0x7F);     // no infinities
  EXPECT_EQ(float_to_fp8_e4m3fn(0.0019531f), 0x01);
  EXPECT_EQ(float_to_fp8_e4m3fn(0x1p-9f), 0x01);
  EXPECT_EQ(float_to_fp8_e4m3fn(0x1p-10f), 0x00);  // tie to even (zero)
  EXPECT_EQ(float_to_fp8_e4m3fn(3 * 0x1p-10f), 0x02);
  EXPECT_EQ(float_to_fp8_e4m3fn(0x1p-6f), 0x08);  // smallest normal
  EXPECT_EQ(float_to_fp8_e4m3fn(1.0f), 0x38);
  EXPECT_EQ(float_to_fp8_e4m3fn(1.0f + 1.0f / 16), 0x38);  // tie to even (down)
  EXPECT_EQ(float_to_fp8_e4m3fn(1.0f + 3.0f / 16), 0x3A);  // tie to even (up)
  EXPECT_EQ(float_to_fp8_e4m3fn(kNaN) & 0x7F, 0x7F);
  EXPECT_EQ(fp8_e4m3fn_to_float(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3fn_to_float(0x01), 0x1p-9f);
  EXPECT_EQ(fp8_e4m3fn_to_float(0xB8), -1.0f);
  EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(fp8_e4m3fn_to_float(0xFF)));
  EXPECT_FALSE(std::isinf(fp8_e4m3fn_to_float(0x78)));  // 256: e4m3fn has no inf code
}

TEST(DType, Float8E5M2KnownBits) {
  EXPECT_EQ(float_to_fp8_e5m2(57344.0f), 0x7B);
  EXPECT_EQ(float_to_fp8_e5m2(61439.0f), 0x7B);
  EXPECT_EQ(float_to_fp8_e5m2(61440.0f), 0x7C);  // tie to even: inf
  EXPECT_EQ(float_to_fp8_e5m2(1e6f), 0x7C);
  EXPECT_EQ(float_to_fp8_e5m2(-1e6f), 0xFC);
  EXPECT_EQ(float_to_fp8_e5m2(kInf), 0x7C);
  EXPECT_EQ(float_to_fp8_e5m2(0x1p-16f), 0x01);
  EXPECT_EQ(float_to_fp8_e5m2(0x1p-17f), 0x00);
  EXPECT_EQ(float_to_fp8_e5m2(1.0f), 0x3C);
  EXPECT_EQ(float_to_fp8_e5m2(1.0f + 1.0f / 8), 0x3C);  // tie to even (down)
  EXPECT_EQ(float_to_fp8_e5m2(1.0f + 3.0f / 8), 0x3E);  // tie to even (up)
  EXPECT_EQ(float_to_fp8_e5m2(kNaN), 0x7F);
  EXPECT_EQ(fp8_e5m2_to_float(0x7B), 57344.0f);
  EXPECT_EQ(fp8_e5m2_to_float(0x7C), kInf);
  EXPECT_EQ(fp8_e5m2_to_float(0xFC), -kInf);
  EXPECT_TRUE(std::isnan(fp8_e5m2_to_float(0x7F)));
}

TEST(DType, EveryCodeRoundTrips) {
  for (int code = 0; code < 256; ++code) {
    const float e4m3 = fp8_e4m3fn_to_float(static_cast<uint8_t>(code));
    const float e5m2 = fp8_e5m2_to_float(static_cast<uint8_t>(code));
    EXPECT_EQ(float_to_fp8_e4m3fn(e4m3), std::isnan(e4m3) ? (code | 0x7F) : code);
    EXPECT_EQ(float_to_fp8_e5m2(e5m2), std::isnan(e5m2) ? (code | 0x7F) : code);
  }
  for (int code = 0; code < 65536; ++code) {
    const float half = fp16_to_float(static_cast<uint16_t>(code));
    const float brain = bf16_to_float(static_cast<uint16_t>(code));
    if (std::isnan(half)) {
      ASSERT_TRUE(std::isnan(fp16_to_float(float_to_fp16(half)))) << code;
    } else {
      ASSERT_EQ(float_to_fp16(half), code);
    }
    if (std::isnan(brain)) {
      ASSERT_TRUE(std::isnan(bf16_to_float(float_to_bf16(brain)))) << code;
    } else {
      ASSERT_EQ(float_to_bf16(brain), code);
    }
  }
}

double round_trip(DType dtype, double value) {
  alignas(8) unsigned char element[8] = {};
  store_element(dtype, element, value);
  return load_element(dtype, element);
}

TEST(DType, LoadAndStoreEveryType) {
  EXPECT_EQ(round_trip(DType::Float64, 0.1), 0.1);
  EXPECT_EQ(round_trip(DType::Float32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(round_trip(DType::Float16, 65504.0), 65504.0);
  EXPECT_EQ(round_trip(DType::BFloat16, -2.0), -2.0);
  EXPECT_EQ(round_trip(DType::Float8E4M3FN, 448.0), 448.0);
  EXPECT_TRUE(std::isnan(round_trip(DType::Float8E4M3FN, 1000.0)));
  EXPECT_EQ(round_trip(DType::Float8E5M2, 1e6), INFINITY);
  EXPECT_EQ(round_trip(DType::Int8, -1.7), -1.0);   // truncation toward zero
  EXPECT_EQ(round_trip(DType::Int8, 300.0), 44.0);  // wraps modulo 256
  EXPECT_EQ(round_trip(DType::Int16, 40000.0), 40000.0 - 65536.0);
  EXPECT_EQ(round_trip(DType::Int32, -123456.9), -123456.0);
  EXPECT_EQ(round_trip(DType::Int32, 3e9), 3e9 - 4294967296.0);
  EXPECT_EQ(round_trip(DType::Int64, 9007199254740992.0), 9007199254740992.0);
  EXPECT_EQ(round_trip(DType::Int64, 9223372036854775808.0), -9223372036854775808.0);
  EXPECT_EQ(round_trip(DType::UInt8, -1.0), 255.0);
  EXPECT_EQ(round_trip(DType::UInt8, 255.9), 255.0);
  EXPECT_EQ(round_trip(DType::Bool, 0.5), 1.0);
  EXPECT_EQ(round_trip(DType::Bool, 0.0), 0.0);
  EXPECT_EQ(round_trip(DType::Int32, std::nan("")), 0.0);

  unsigned char bf16[2];
  store_element(DType::BFloat16, bf16, 1.0);
  EXPECT_EQ(bf16[0] | (bf16[1] << 8), 0x3F80);  // little-endian storage
  unsigned char flag = 7;
  EXPECT_EQ(load_element(DType::Bool, &flag), 1.0);
}

}  // namespace
}  // namespace kernelarc

#include "core/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "core/tensor.h"
#include "test_support.h"

namespace kernelarc {
namespace {

using testing::input_error_of;
using testing::TempDir;

TEST(Tensor, ShapeHelpers) {
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({3, 0, 2}), 0);
  EXPECT_EQ(shape_numel({4, 4096}), 4 * 4096);
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(contiguous_strides({}).empty());
  EXPECT_EQ(shape_to_string({4, 4096}), "[4, 4096]");
  EXPECT_EQ(shape_to_string({}), "[]");
  const HostTensor tensor(DType::BFloat16, {2, 3});
  EXPECT_EQ(tensor.numel(), 6);
  EXPECT_EQ(tensor.nbytes(), 12u);
  EXPECT_EQ(tensor.at(5), 0.0);
}

HostTensor ramp(DType dtype, std::vector<int64_t> shape) {
  HostTensor tensor(dtype, std::move(shape));
  for (int64_t index = 0; index < tensor.numel(); ++index) {
    tensor.set(index, static_cast<double>(index % 7) - 3.0);
  }
  return tensor;
}

TEST(Safetensors, RoundTripsEveryDType) {
  TempDir dir;
  TensorMap tensors;
  for (int value = KA_FLOAT64; value <= KA_BOOL; ++value) {
    const auto dtype = static_cast<DType>(value);
    tensors[std::string(dtype_name(dtype))] = ramp(dtype, {3, 5});
    tensors[std::string(dtype_name(dtype)) + "_0d"] = ramp(dtype, {});
  }
  tensors["empty"] = HostTensor(DType::Float32, {0, 4});
  const auto path = dir / "all.safetensors";
  write_safetensors(path, tensors, {{"format", "pt"}, {"seed", "17"}});

  const TensorMap read = read_safetensors(path);
  ASSERT_EQ(read.size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    const HostTensor& other = read.at(name);
    EXPECT_EQ(other.dtype, tensor.dtype);
    EXPECT_EQ(other.shape, tensor.shape);
    EXPECT_EQ(other.bytes, tensor.bytes);
  }
  EXPECT_EQ(read.at("float8_e4m3fn").at(2), -1.0);
  EXPECT_EQ(read.at("bool").at(3), 0.0);
  EXPECT_EQ(read.at("uint8").at(0), 253.0);  // -3 wraps
  EXPECT_EQ(read.at("int64_0d").shape.size(), 0u);
  EXPECT_EQ(read.at("int64_0d").at(0), -3.0);

  const HostTensor single = read_safetensors_tensor(path, "bfloat16");
  EXPECT_EQ(single.bytes, tensors.at("bfloat16").bytes);
  const std::string message = input_error_of([&] { read_safetensors_tensor(path, "nope"); });
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("no tensor \"nope\""), std::string::npos) << message;
}

TEST(Safetensors, HeaderIsPaddedAndReadableByTheSpec) {
  TempDir dir;
  const auto path = dir / "one.safetensors";
  TensorMap tensors;
  tensors["x"] = ramp(DType::Float32, {3});
  write_safetensors(path, tensors);
  std::ifstream file(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), 8);
  EXPECT_EQ((8 + header_size) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + header_size + 12);
  const std::string header = bytes.substr(8, header_size);
  EXPECT_EQ(header.rfind("{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}", 0),
            0u)
      << header;
  const std::size_t last = header.find_last_not_of(' ');
  EXPECT_EQ(header[last], '}');
  EXPECT_LT(header.size() - last - 1, 8u);  // only the padding follows the JSON
  // The temporary file is gone after the rename.
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path()))
    ++entries;
  EXPECT_EQ(entries, 1);
}

// Writes a file with the given header text and `data_bytes` bytes of data.
std::filesystem::path write_raw(const TempDir& dir, const std::string& name,
                                const std::string& header, std::size_t data_bytes,
                                uint64_t declared_size = UINT64_MAX) {
  const uint64_t size = declared_size == UINT64_MAX ? header.size() : declared_size;
  std::string bytes(8, '\0');
  for (int byte = 0; byte < 8; ++byte) bytes[byte] = static_cast<char>((size >> (8 * byte)) & 0xFF);
  bytes += header;
  bytes += std::string(data_bytes, '\x01');
  return dir.write(name, bytes);
}

void expect_corrupt(const std::filesystem::path& path, const std::string& expected) {
  const std::string message = input_error_of([&] { read_safetensors(path); });
  EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(expected), std::string::npos) << message;
}

TEST(Safetensors, CorruptFilesRaiseInputErrorNamingTheFile) {
  TempDir dir;
  const std::string good = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_NO_THROW(read_safetensors(write_raw(dir, "good.safetensors", good, 8)));

  expect_corrupt(dir.write("short.safetensors", "abc"), "truncated: 3 bytes");
  expect_corrupt(write_raw(dir, "length.safetensors", good, 8, 1000),
                 "header length 1000 exceeds the file");
  expect_corrupt(write_raw(dir, "json.safetensors", "{\"x\": [", 0), "header: invalid JSON");
  expect_corrupt(write_raw(dir, "array.safetensors", "[1, 2]", 0),
                 "header: expected object, got array");
  expect_corrupt(write_raw(dir, "dtype.safetensors",
                           R"({"x":{"dtype":"F8_E8M0","shape":[2],"data_offsets":[0,2]}})", 2),
                 "tensor \"x\".dtype: unknown dtype \"F8_E8M0\"");
  expect_corrupt(write_raw(dir, "range.safetensors", good, 4),
                 "tensor \"x\".data_offsets: [0, 8] is outside the data section of 4 bytes");
  expect_corrupt(write_raw(dir, "size.safetensors",
                           R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                 "holds 8 bytes, but shape [3] of float32 needs 12");
  expect_corrupt(write_raw(dir, "overlap.safetensors",
                           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                           12),
                 "tensors \"a\" and \"b\" overlap");
  expect_corrupt(write_raw(dir, "negative.safetensors",
                           R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
                 "tensor \"x\".shape: expected a non-negative integer, got -2");
  expect_corrupt(write_raw(dir, "missing.safetensors", R"({"x":{"dtype":"F32","shape":[2]}})", 8),
                 "tensor \"x\": missing \"data_offsets\"");
  expect_corrupt(write_raw(dir, "meta.safetensors", R"({"__metadata__":{"a":1}})", 0),
                 "__metadata__.a: expected string, got integer");
  expect_corrupt(dir / "absent.safetensors", "cannot open");
}

// safetensors' F4 header counts 4-bit values, as the Python package writes a
// torch.float4_e2m1fn_x2 tensor; kernelarc's shape, like torch's, counts bytes of two.
TEST(Safetensors, Float4IsStoredAsF4WithTheHeaderCountingValues) {
  TempDir dir;
  const auto path = dir / "fp4.safetensors";
  TensorMap tensors;
  HostTensor packed(DType::Float4E2M1FNx2, {2, 3});
  for (std::size_t i = 0; i < packed.bytes.size(); ++i)
    packed.bytes[i] = static_cast<std::byte>(0x10 * i + 0x0F - i);
  tensors["k"] = packed;
  tensors["alias"] = HostTensor(DType::Float4E2M1, {4});
  write_safetensors(path, tensors);
  std::ifstream file(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find(R"("k":{"dtype":"F4","shape":[2,6],"data_offsets":[4,10]})"),
            std::string::npos)
      << bytes.substr(8, 120);
  EXPECT_NE(bytes.find(R"("alias":{"dtype":"F4","shape":[8])"), std::string::npos);

  const TensorMap read = read_safetensors(path);
  EXPECT_EQ(read.at("k").dtype, DType::Float4E2M1FNx2);
  EXPECT_EQ(read.at("k").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(read.at("k").bytes, packed.bytes);
  EXPECT_EQ(read.at("alias").dtype, DType::Float4E2M1FNx2);  // F4 reads back as torch's name
  EXPECT_EQ(read.at("alias").shape, (std::vector<int64_t>{4}));

  expect_corrupt(write_raw(dir, "odd.safetensors",
                           R"({"x":{"dtype":"F4","shape":[2,3],"data_offsets":[0,3]}})", 3),
                 "tensor \"x\".shape: F4 packs two values per byte along the last dimension, so "
                 "it needs an even last dimension, got [2, 3]");
  expect_corrupt(write_raw(dir, "fp4size.safetensors",
                           R"({"x":{"dtype":"F4","shape":[8],"data_offsets":[0,8]}})", 8),
                 "holds 8 bytes, but shape [4] of float4_e2m1fn_x2 needs 4");
}

TEST(Safetensors, OverwriteReplacesTheFile) {
  TempDir dir;
  const auto path = dir / "t.safetensors";
  TensorMap first;
  first["a"] = ramp(DType::Int32, {4});
  write_safetensors(path, first);
  TensorMap second;
  second["b"] = ramp(DType::Float16, {2, 2});
  write_safetensors(path, second);
  const TensorMap read = read_safetensors(path);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read.begin()->first, "b");
}

}  // namespace
}  // namespace kernelarc

// A contiguous, row-major tensor in host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/large_block.h"

namespace kernelarc {

/// A tensor's bytes: large ones in blocks of their own (core/large_block.h), and not zeroed by
/// resize(), since a tensor's storage is written in full once it has its size.
using TensorBytes = std::vector<std::byte, BlockAllocator<std::byte>>;

struct HostTensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  ///< empty for a 0-D tensor or a scalar
  TensorBytes bytes;

  HostTensor() = default;
  /// Allocates zero-filled storage for the shape.
  HostTensor(DType dtype, std::vector<int64_t> shape);

  int64_t numel() const;
  std::size_t nbytes() const { return bytes.size(); }
  double at(int64_t index) const {
    return load_element(dtype, bytes.data() + index * dtype_size(dtype));
  }
  void set(int64_t index, double value) {
    store_element(dtype, bytes.data() + index * dtype_size(dtype), value);
  }
};

/// A tensor's elements where they already lie (a HostTensor, the worker's arena), read in
/// place: comparing a 256 MiB output through a copy costs a fresh zeroed allocation each time.
struct TensorView {
  DType dtype = DType::Float32;
  std::span<const std::byte> bytes;

  TensorView() = default;
  TensorView(DType dtype, std::span<const std::byte> bytes) : dtype(dtype), bytes(bytes) {}
  TensorView(const HostTensor& tensor)  // NOLINT(google-explicit-constructor): a view of it
      : dtype(tensor.dtype), bytes(tensor.bytes) {}

  int64_t numel() const { return static_cast<int64_t>(bytes.size() / dtype_size(dtype)); }
};

/// Tensors by name. Ordered so that iteration (and anything hashed from it) is deterministic.
using TensorMap = std::map<std::string, HostTensor>;

int64_t shape_numel(const std::vector<int64_t>& shape);
/// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);
/// "[4, 4096]"
std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace kernelarc

// A contiguous, row-major tensor in host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace kernelarc {

struct HostTensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  ///< empty for a 0-D tensor or a scalar
  std::vector<std::byte> bytes;

  HostTensor() = default;
  /// Allocates zero-filled storage for the shape.
  HostTensor(DType dtype, std::vector<int64_t> shape);

  int64_t numel() const;
  std::size_t nbytes() const { return bytes.size(); }
  double at(int64_t index) const { return load_element(dtype, bytes.data() + index * dtype_size(dtype)); }
  void set(int64_t index, double value) { store_element(dtype, bytes.data() + index * dtype_size(dtype), value); }
};

/// Tensors by name. Ordered so that iteration (and anything hashed from it) is deterministic.
using TensorMap = std::map<std::string, HostTensor>;

int64_t shape_numel(const std::vector<int64_t>& shape);
/// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);
/// "[4, 4096]"
std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace kernelarc

#include "core/tensor.h"

#include <utility>

namespace kernelarc {

HostTensor::HostTensor(DType dtype_, std::vector<int64_t> shape_)
    : dtype(dtype_), shape(std::move(shape_)) {
  bytes.resize(static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype), std::byte{0});
}

int64_t HostTensor::numel() const {
  return shape_numel(shape);
}

int64_t shape_numel(const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (int64_t extent : shape) numel *= extent;
  return numel;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (std::size_t dim = shape.size(); dim-- > 0;) {
    strides[dim] = stride;
    stride *= shape[dim];
  }
  return strides;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (std::size_t dim = 0; dim < shape.size(); ++dim) {
    if (dim > 0) text += ", ";
    text += std::to_string(shape[dim]);
  }
  return text + "]";
}

}  // namespace kernelarc

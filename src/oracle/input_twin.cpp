#include "oracle/input_twin.h"

#include <cmath>

#include "core/rng.h"

namespace kernelarc {
namespace {

/// Overwrites one element of a random row with the finite element of that row farthest from it;
/// false when the row offers none (constant, or all non-finite).
bool change_one_element(HostTensor& tensor, Rng& rng) {
  const int64_t numel = tensor.numel();
  const int64_t row_length = tensor.shape.empty() ? 1 : tensor.shape.back();
  if (numel < 2 || row_length < 1) return false;
  const int64_t rows = numel / row_length;
  // A 1-D tensor (or one whose rows hold a single element) is one row.
  const int64_t length = row_length >= 2 ? row_length : numel;
  const int64_t row = row_length >= 2 ? static_cast<int64_t>(rng.below(rows)) : 0;
  const int64_t first = row * length;
  const int64_t target = first + static_cast<int64_t>(rng.below(length));
  const double value = tensor.at(target);
  if (!std::isfinite(value)) return false;
  int64_t farthest = -1;
  double distance = 0;
  for (int64_t i = first; i < first + length; ++i) {
    const double candidate = tensor.at(i);
    if (std::isfinite(candidate) && std::abs(candidate - value) > distance) {
      distance = std::abs(candidate - value);
      farthest = i;
    }
  }
  if (farthest < 0) return false;
  tensor.set(target, tensor.at(farthest));
  return true;
}

}  // namespace

std::optional<TensorMap> make_twin(const TensorMap& inputs, uint64_t seed) {
  Rng rng(seed);
  TensorMap twin = inputs;
  bool changed = false;
  for (auto& [name, tensor] : twin) {
    if (dtype_is_floating(tensor.dtype)) changed = change_one_element(tensor, rng) || changed;
  }
  if (!changed) return std::nullopt;
  return twin;
}

bool twin_applies(const Workload& workload) {
  for (const auto& [name, input] : workload.inputs) {
    if (input.kind == InputKind::Custom) return false;
  }
  return true;
}

}  // namespace kernelarc

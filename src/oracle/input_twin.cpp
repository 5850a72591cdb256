#include "oracle/input_twin.h"

#include <cmath>

#include "core/rng.h"

namespace kernelarc {
namespace {

/// Whether any element of [first, first + length) but `skip` holds `value`.
bool row_holds(const HostTensor& tensor, int64_t first, int64_t length, int64_t skip,
               double value) {
  for (int64_t i = first; i < first + length; ++i)
    if (i != skip && tensor.at(i) == value) return true;
  return false;
}

/// Overwrites one element of a random row with a value between it and the finite element of
/// that row farthest from it (halfway, or a quarter or three quarters of the way when the row
/// already holds that value in the tensor's dtype); false when the row offers none (constant,
/// or all non-finite). Not the farthest value itself: a copy of a row's extreme is a tie at the
/// top of a topk or sort, which the reference orders its own undocumented way.
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
  const double far = tensor.at(farthest);
  for (const double share : {0.5, 0.25, 0.75}) {
    tensor.set(target, value + share * (far - value));
    const double stored = tensor.at(target);  // rounded to the tensor's dtype
    if (stored != value && !row_holds(tensor, first, length, target, stored)) return true;
  }
  tensor.set(target, far);  // a row too coarse for any value between (a few low-precision steps)
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

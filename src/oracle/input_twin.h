// The twin of a trial: the same inputs with one element of every floating tensor overwritten by
// the element of its row that lies farthest from it. The guard audits one timed call on the twin
// of the timing inputs: a result cache keyed on a sample of the inputs (cheaper than a full hash,
// which per-call perturbation already defeats) almost surely misses the changed elements, returns
// the stored result of the original inputs and fails the comparison.
#pragma once

#include <cstdint>
#include <optional>

#include "core/problem.h"
#include "core/tensor.h"

namespace kernelarc {

/// The twin of `inputs`, or nullopt when no floating tensor could be changed (all of them too
/// small or constant along their rows). Deterministic for a seed.
std::optional<TensorMap> make_twin(const TensorMap& inputs, uint64_t seed);

/// Whether a workload can have a twin: not when any input is built by the problem's own
/// custom-inputs function, whose structure a changed element could break.
bool twin_applies(const Workload& workload);

}  // namespace kernelarc

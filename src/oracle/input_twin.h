// The twin of a trial: the same inputs with one element of every floating tensor moved halfway
// toward the element of its row that lies farthest from it (a value no other element of the row
// holds, where the dtype allows). The guard runs one timed call, at a position
// nobody can predict, on the twin of trial 0: a result cache keyed on a sample of the inputs
// almost surely misses the changed elements, returns the stored result of trial 0 and fails the
// comparison.
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

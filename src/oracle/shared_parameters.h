// Which inputs of a workload the oracle draws once and shares between its trials.
//
// A mixture-of-experts layer's expert weights are 1.2 GB per draw; stored once per trial (about
// 22 per workload, and the twin) they filled a 64 GiB disk. Real weights are fixed across calls
// too, while the activations change with every call: so when a workload's inputs are large, its
// parameters (drawn tensor inputs whose shape uses no var axis) are drawn once per problem
// and only the activations stay fresh per trial. A result cache keyed on the activations still
// misses; what a candidate could keep across calls is a transform of the fixed weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/problem.h"

namespace kernelarc {

/// A parameter smaller than this stays fresh per trial: sharing it would save nothing.
inline constexpr std::uint64_t kMinSharedParameterBytes = std::uint64_t{1} << 20;

/// The shared inputs of `workload`, in definition order: empty when `threshold_bytes` is 0, when
/// the workload's tensor inputs take `threshold_bytes` or less, or when no drawn input with a
/// var (or expression) axis stays fresh (then every trial would see the same inputs). Otherwise
/// each input the oracle draws (at random or through the definition's make_inputs; not a scalar
/// or file input) whose shape has only const axes (or expressions of them) and literal sizes, of
/// kMinSharedParameterBytes or more. A make_inputs whose const-shaped tensors must agree with its
/// var-shaped ones would be broken by this; such tensors are rarely over the threshold.
/// Deterministic in its arguments.
std::vector<std::string> shared_parameter_inputs(const Definition& definition,
                                                 const Workload& workload,
                                                 std::uint64_t threshold_bytes);

}  // namespace kernelarc

// Input generation in C++, for problems with a native reference (no Python anywhere).
//
// The distributions and name heuristics are SOL-ExecBench's, as in python/kernelarc_oracle.py;
// the values differ from torch's (a different generator) but are fully determined by the seed on
// every platform: xoshiro256** seeded through splitmix64, normals by Box-Muller, never
// std::normal_distribution, whose algorithm differs between standard libraries.
#pragma once

#include <cstdint>
#include <vector>

#include "core/problem.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "oracle/input_heuristics.h"

namespace kernelarc {


/// A random tensor of the dtype's default distribution (float: randn; float8: randn clamped to
/// +-2; bool: {0,1}; int8: [-128,128); uint8: [0,256); other ints: [-1024,1024)) or, for
/// floating dtypes, the given heuristic pattern.
HostTensor random_tensor(DType dtype, const std::vector<int64_t>& shape, InputPattern pattern,
                         Rng& rng);

/// Every input of a workload by definition name, drawn from `seed`: random inputs (with the
/// name heuristics and the sampling/probs softmax), scalars as 0-D tensors, safetensors blobs
/// read from the problem directory. Throws InputError for custom inputs (they need the Python
/// reference's entry point) and for a blob that is missing or has the wrong shape or dtype.
TensorMap generate_inputs(const Problem& problem, const Workload& workload, uint64_t seed);

}  // namespace kernelarc

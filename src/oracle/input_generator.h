// Input generation in C++, for problems with a native reference (no Python anywhere).
//
// The distributions and name heuristics are SOL-ExecBench's, as in python/kernelarc_oracle.py;
// the values differ from torch's (a different generator) but are fully determined by the seed on
// every platform: xoshiro256** seeded through splitmix64, normals by Box-Muller, never
// std::normal_distribution, whose algorithm differs between standard libraries.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/problem.h"
#include "core/tensor.h"
#include "oracle/input_heuristics.h"

namespace kernelarc {

class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  /// Uniform in [0, 1), 53 random bits.
  double uniform();
  double uniform(double low, double high) { return low + (high - low) * uniform(); }
  /// Standard normal.
  double normal();
  /// Uniform integer in [low, high).
  int64_t integer(int64_t low, int64_t high);

 private:
  std::array<uint64_t, 4> state_;
  double spare_normal_ = 0;
  bool has_spare_ = false;
};

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

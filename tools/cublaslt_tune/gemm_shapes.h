// The GEMMs a gemm-family problem runs: which inputs are A and B, their layout and dtypes, and
// the distinct (M, N, K) of its workloads. The template's binder (src/synth/family_gemm.cpp)
// reads a definition the same way; the tuner needs only this much of it, on any machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/problem.h"

namespace kernelarc::cublaslt {

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool operator==(const GemmShape&) const = default;
  auto operator<=>(const GemmShape&) const = default;
};

struct GemmProblemShapes {
  bool a_k_major = true;  ///< A is [M, K] (else [K, M])
  bool b_k_major = true;  ///< B is [N, K] (else [K, N])
  DType type_a = DType::BFloat16, type_b = DType::BFloat16, type_c = DType::BFloat16;
  std::vector<GemmShape> shapes;  ///< distinct, ascending
};

/// InputError naming the definition when it is not a plain gemm: output 0 of shape [M, N] and
/// two rank-2 inputs that share the reduced axis K, A holding M and B holding N.
GemmProblemShapes gemm_problem_shapes(const Problem& problem);

}  // namespace kernelarc::cublaslt

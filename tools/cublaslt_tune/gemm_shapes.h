// The GEMMs a gemm-family problem runs: the layout and dtypes of A, B and C and the distinct
// (M, N, K) of its workloads, read as the templates' binder reads them (synth/family_gemm.h).
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

/// InputError naming the definition and field when it is not a gemm the templates serve.
GemmProblemShapes gemm_problem_shapes(const Problem& problem);

}  // namespace kernelarc::cublaslt

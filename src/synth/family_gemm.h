// The gemm family as its binder sees a problem once it has checked it: which inputs are A and
// B and in which layout, the output C, and the epilogue with the inputs it reads. The binder
// (family_gemm.cpp) builds it from a definition; the header generator (family_gemm_header.cpp)
// turns it into ka_problem.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "synth/elementwise_expr.h"
#include "synth/kernel_template.h"

namespace kernelarc {

/// KA_EPILOGUE_KIND: the epilogues a library with native epilogues (cuBLASLt) can run itself.
enum class GemmEpilogueKind { None, Bias, Relu, Gelu, BiasRelu, BiasGelu, Custom };

/// How an epilogue input is indexed by an output element (row, col).
enum class GemmOperandShape { PerColumn, Full, Scalar };

struct GemmTensor {
  std::string name;
  DType dtype = DType::Float32;
  int index = 0;                   ///< in inputs[] or outputs[]
  std::vector<std::string> shape;  ///< axis names; empty for a scalar or 0-D input
};

struct GemmEpilogueInput {
  GemmTensor tensor;
  GemmOperandShape shape = GemmOperandShape::PerColumn;
};

struct GemmProblem {
  GemmTensor a, b, c;
  std::string m_axis, n_axis, k_axis;
  bool a_k_major = true;                           ///< A is [M, K] (else [K, M])
  bool b_k_major = true;                           ///< B is [N, K] (else [K, N])
  std::optional<ElementwiseExpr> epilogue;         ///< over "acc" and the epilogue inputs
  std::vector<GemmEpilogueInput> epilogue_inputs;  ///< in definition order
  GemmEpilogueKind kind = GemmEpilogueKind::None;
  std::optional<GemmTensor> bias;  ///< the per-column input of a Bias* kind
  int n_inputs = 0;
  std::vector<std::string> axes;  ///< every axis of the definition, in order (kernel params)
};

/// Reads a gemm definition: A, B and C, their layouts, and the epilogue. TemplateMismatch naming
/// the field when the definition is not a gemm the templates can serve.
GemmProblem analyse_gemm(const Definition& definition);

/// ka_problem.h for `problem` served by `kernel` (its target and build pick the form).
std::string generate_gemm_header(const GemmProblem& problem, const Definition& definition,
                                 const KernelTemplate& kernel);

}  // namespace kernelarc

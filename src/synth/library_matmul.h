// Which matmul kernels of a fused plan the CUDA generator may hand to cuBLASLt, and the plan
// additions that route needs. A generated mma.sync kernel reaches a third of cuBLAS's rate on
// Hopper, so a matmul whose operands a BLAS can read (an element stride of one along a matrix
// dimension, no gather) gets a second route, chosen by the knob MATMUL_LIBRARY and taken when the
// sizes and strides seen at run time suit cuBLASLt (else the generated kernel runs).
//
// Two forms:
// - direct: the matmul's one store that reads the product is the product (times a literal, plus
//   a residual read with the destination's strides) into a float buffer cuBLASLt can write:
//   D = alpha A.B + C; its stores that do not read the product, if any, run as an added
//   pointwise kernel over [batch..., m, n];
// - with an epilogue: cuBLASLt writes the product into an added float32 temp and an added
//   pointwise kernel over [batch..., m, n] computes the stores from it, so bias, activations,
//   gated pairs and reductions' inputs keep working, at one more pass over the product.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "synth/kernel_plan.h"

namespace kernelarc {

struct LibraryMatmul {
  std::size_t kernel = 0;       ///< the matmul's index in the plan
  PlanAccess d;                 ///< what cuBLASLt writes (coords: batch..., m, n dims)
  std::optional<PlanAccess> c;  ///< direct: a residual read, added with beta 1
  double alpha = 1;             ///< direct: the literal scale of the product
  /// The added pointwise kernel's index: the epilogue form's, or the direct form's stores that
  /// do not read the product.
  std::optional<std::size_t> epilogue;
};

/// The plan with each added temp and epilogue kernel (the epilogues after the plan's own
/// kernels: ka_plan_run launches one only right after its matmul ran through the library), and
/// the matmuls that may take the library route. An empty list leaves the plan as it was.
struct LibraryPlan {
  KernelPlan plan;
  std::vector<LibraryMatmul> matmuls;
  std::size_t own_kernels = 0;  ///< kernels of the original plan; the rest are epilogues
};

LibraryPlan with_library_matmuls(const KernelPlan& plan);

/// Whether every coord of `access` is an index dimension or a non-negative literal, so that it
/// has one stride per dimension (its sum over the coords naming it).
bool is_affine_access(const PlanAccess& access);

}  // namespace kernelarc

#include "gemm_shapes.h"

#include <algorithm>

#include "core/error.h"
#include "synth/family_gemm.h"

namespace kernelarc::cublaslt {

GemmProblemShapes gemm_problem_shapes(const Problem& problem) {
  const Definition& def = problem.definition;
  if (def.ext.op_family != "gemm")
    throw_input_error(def.path.string(), "kernelarc.op_family",
                      "expected \"gemm\", got \"" + def.ext.op_family + "\"");
  // The same reading of the definition as the templates' binder, so that the table is keyed
  // by the layout the cuBLASLt template will look it up with.
  const GemmProblem gemm = analyse_gemm(def);
  GemmProblemShapes result;
  result.a_k_major = gemm.a_k_major;
  result.b_k_major = gemm.b_k_major;
  result.type_a = gemm.a.dtype;
  result.type_b = gemm.b.dtype;
  result.type_c = gemm.c.dtype;
  for (const Workload& workload : problem.workloads) {
    const AxisValues axes = resolve_axes(def, workload);
    result.shapes.push_back({axes.at(gemm.m_axis), axes.at(gemm.n_axis), axes.at(gemm.k_axis)});
  }
  std::sort(result.shapes.begin(), result.shapes.end());
  result.shapes.erase(std::unique(result.shapes.begin(), result.shapes.end()), result.shapes.end());
  return result;
}

}  // namespace kernelarc::cublaslt

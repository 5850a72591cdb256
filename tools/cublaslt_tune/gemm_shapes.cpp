#include "gemm_shapes.h"

#include <algorithm>
#include <optional>

#include "core/error.h"

namespace kernelarc::cublaslt {

namespace {

/// The axis of a rank-2 shape other than `axis`, when `axis` is one of its two.
std::optional<std::string> other_axis(const TensorSpec& tensor, const std::string& axis) {
  if (!tensor.shape || tensor.shape->size() != 2) return std::nullopt;
  const std::vector<std::string>& shape = *tensor.shape;
  if (shape[0] == axis) return shape[1];
  if (shape[1] == axis) return shape[0];
  return std::nullopt;
}

}  // namespace

GemmProblemShapes gemm_problem_shapes(const Problem& problem) {
  const Definition& def = problem.definition;
  const std::string where = def.path.string();
  if (def.ext.op_family != "gemm")
    throw_input_error(where, "kernelarc.op_family",
                      "expected \"gemm\", got \"" + def.ext.op_family + "\"");
  const TensorSpec& c = def.outputs.front();
  if (!c.shape || c.shape->size() != 2)
    throw_input_error(where, "outputs." + c.name + ".shape", "expected [M, N]");
  const std::string m_axis = (*c.shape)[0], n_axis = (*c.shape)[1];

  for (const TensorSpec& a : def.inputs) {
    const std::optional<std::string> k_from_a = other_axis(a, m_axis);
    if (!k_from_a) continue;
    for (const TensorSpec& b : def.inputs) {
      if (&a == &b || other_axis(b, n_axis) != k_from_a) continue;
      const std::string& k_axis = *k_from_a;
      GemmProblemShapes result;
      result.a_k_major = (*a.shape)[1] == k_axis && (*a.shape)[0] == m_axis;
      result.b_k_major = (*b.shape)[1] == k_axis && (*b.shape)[0] == n_axis;
      result.type_a = a.dtype;
      result.type_b = b.dtype;
      result.type_c = c.dtype;
      for (const Workload& workload : problem.workloads) {
        const AxisValues axes = resolve_axes(def, workload);
        result.shapes.push_back({axes.at(m_axis), axes.at(n_axis), axes.at(k_axis)});
      }
      std::sort(result.shapes.begin(), result.shapes.end());
      result.shapes.erase(std::unique(result.shapes.begin(), result.shapes.end()),
                          result.shapes.end());
      return result;
    }
  }
  throw_input_error(where, "inputs",
                    "expected two rank-2 inputs sharing a reduced axis K, one holding " + m_axis +
                        " and one holding " + n_axis + " (the axes of output " + c.name + ")");
}

}  // namespace kernelarc::cublaslt

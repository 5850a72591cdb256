// The row-reduction families (rmsnorm, layernorm, softmax, logsumexp, per-row quantize and
// reduce over the last axis) as the row binder sees a problem once it has checked it: which tensor
// plays which role, and the fused prologue. The binder (family_row.cpp) builds it from a
// definition; the header generator (family_row_header.cpp) turns it into ka_problem.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "synth/elementwise_expr.h"
#include "synth/kernel_template.h"

namespace kernelarc {

enum class RowOp { RmsNorm, LayerNorm, Softmax, LogSumExp, Quantize, Reduce };

/// What a reduce over the last axis computes (kernelarc.op_params.op).
enum class RowReduction { Sum, Mean, Max, Min };

/// One value per row (logsumexp, reduce) rather than a row of values.
inline bool writes_row_values(RowOp op) {
  return op == RowOp::LogSumExp || op == RowOp::Reduce;
}

/// A tensor of the definition with its position in the ABI argument list.
struct RowTensor {
  std::string name;
  DType dtype = DType::Float32;
  int index = 0;  ///< in inputs[] or outputs[]
  std::vector<std::string> shape;
};

struct RowProblem {
  RowOp op = RowOp::RmsNorm;
  std::string family;
  double eps = 1e-5;
  std::vector<std::string> row_shape;  ///< [..., C]: the leading axes are the rows
  std::vector<RowTensor> row_inputs;   ///< shape row_shape, in definition order
  std::vector<RowTensor> scalars;      ///< scalar (or 0-D) inputs, read once as float
  std::optional<RowTensor> weight, bias;
  RowTensor output;                          ///< [..., C], or [...] for logsumexp
  std::optional<RowTensor> prologue_output;  ///< [..., C], receives the prologue value
  /// Quantize: the per-row dequantization scale, float32 [...]; `output` holds the row in the
  /// float8 format, x / scale with scale = max(|x|) / fp8_max, saturated and rounded to nearest.
  std::optional<RowTensor> scale_output;
  double fp8_max = 0;  ///< the format's largest finite value (448 for e4m3fn, 57344 for e5m2)
  RowReduction reduction = RowReduction::Sum;  ///< reduce only
  ElementwiseExpr prologue;                    ///< over row inputs and scalars
  int n_inputs = 0, n_outputs = 0;
};

/// ka_problem.h for `problem` served by `kernel` (its target and build pick the form).
std::string generate_row_header(const RowProblem& problem, const Definition& definition,
                                const KernelTemplate& kernel);

}  // namespace kernelarc

// SOL-ExecBench's name heuristics for random floating inputs: a tensor called `rms_norm_weight`
// is all ones, `attention_mask` an additive causal mask, `cos_cached` the cosine of an angle,
// and so on, because kernels are scored on such data there. python/kernelarc_oracle.py
// implements the same rules (heuristic_pattern); keep the two in step.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace kernelarc {

enum class InputPattern {
  Random,        ///< no heuristic: the dtype's default distribution
  Ones,          ///< *norm_weight
  Zeros,         ///< *norm_bias
  CausalMask,    ///< 0 on and below the diagonal, finfo.min above
  BinaryMask,    ///< {0, 1}
  Cos,           ///< cos(clamp(randn, -pi, pi))
  Sin,           ///< sin(clamp(randn, -pi, pi))
  Positive,      ///< |randn| + 0.1 (rstd, std, var)
  SsmACumsum,    ///< cumsum over the last dim of uniform(-0.1, 0)
  SsmALog,       ///< uniform(-5, -1)
  SsmA,          ///< uniform(-1, -0.001)
  SsmGate,       ///< uniform(-5, 0)
  Softmax,       ///< softmax over the last dim of randn
  ScaledWeight,  ///< randn / sqrt(last dim)
};

/// The heuristic for a random input; Random for non-floating and float8 dtypes, which SOL-ExecBench
/// never treats by name.
InputPattern classify_input(std::string_view name, const std::vector<int64_t>& shape,
                            std::string_view description, DType dtype);

}  // namespace kernelarc

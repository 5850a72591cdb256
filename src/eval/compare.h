// SOL-ExecBench's correctness rule, applied in the parent to what the worker wrote.
#pragma once

#include <cstdint>
#include <string>

#include "core/problem.h"
#include "core/tensor.h"

namespace kernelarc {

struct CompareResult {
  bool passed = false;
  double max_absolute_error = 0;
  /// |d| / max(|ref|, max_atol), SOL-ExecBench's reported relative error.
  double max_relative_error = 0;
  double matched_ratio = 0;
  bool has_nan = false;
  bool has_inf = false;
  /// Why it failed, for the trace log ("3 of 4096 elements are NaN", ...); empty when passed.
  std::string reason;
};

/// Beside the matched ratio, no element of a floating output may miss its reference by more
/// than kErrorCapFactor x (atol + rtol x scale), scale being the output's largest finite |ref|:
/// a 1% share of unmatched elements is for rounding at the tolerance's edge, not for 1e30. A
/// workload's own max_error_cap replaces it.
inline constexpr double kErrorCapFactor = 10.0;
double implicit_error_cap(const Tolerance& tolerance, double scale);

/// Element e passes iff |out - ref| <= max_atol + max_rtol * |ref|; the output passes iff the
/// matched ratio reaches required_matched_ratio, no error exceeds max_error_cap (when set) or, for
/// floating outputs, implicit_error_cap(), and neither tensor holds NaN or Inf (matching -inf is
/// allowed with allow_negative_inf). An all-zero output fails when the reference is not all zero;
/// an output whose element count differs from the reference's fails unread, and so does a float4
/// output (its bytes hold two values each; the guard refuses such problems before running).
CompareResult compare_output(TensorView output, TensorView reference, const Tolerance& tolerance);

/// Number of elements of `output` whose bytes still equal the poison element pattern.
int64_t count_poisoned(TensorView output, const std::vector<uint8_t>& poison);

/// The poison element for a dtype: a quiet NaN for floating types, 0xA5.. / 0x5A.. alternating
/// with `variant` for integer and float4 types (so an unwritten output fails either way).
std::vector<uint8_t> poison_pattern(DType dtype, int variant);

}  // namespace kernelarc

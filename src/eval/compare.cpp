#include "eval/compare.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace kernelarc {

namespace {

bool is_negative_inf(double value) { return std::isinf(value) && value < 0; }

}  // namespace

CompareResult compare_output(const HostTensor& output, const HostTensor& reference,
                             const Tolerance& tolerance) {
  CompareResult result;
  const int64_t n = output.numel();
  int64_t failed = 0, nan_count = 0, inf_count = 0;
  bool output_all_zero = true, reference_all_zero = true;
  for (int64_t i = 0; i < n; ++i) {
    const double out = output.at(i);
    const double ref = reference.at(i);
    if (out != 0) output_all_zero = false;
    if (ref != 0) reference_all_zero = false;
    if (std::isnan(out) || std::isnan(ref)) {
      ++nan_count;
      ++failed;
      continue;
    }
    if (std::isinf(out) || std::isinf(ref)) {
      const bool allowed = tolerance.allow_negative_inf && is_negative_inf(out) &&
                           is_negative_inf(ref);
      if (!allowed) {
        ++inf_count;
        ++failed;
      }
      continue;
    }
    const double diff = std::fabs(out - ref);
    result.max_absolute_error = std::max(result.max_absolute_error, diff);
    result.max_relative_error = std::max(
        result.max_relative_error, diff / std::max(std::fabs(ref), tolerance.max_atol));
    if (diff > tolerance.max_atol + tolerance.max_rtol * std::fabs(ref)) ++failed;
  }
  result.has_nan = nan_count > 0;
  result.has_inf = inf_count > 0;
  result.matched_ratio = n == 0 ? 1.0 : 1.0 - static_cast<double>(failed) / static_cast<double>(n);

  if (nan_count > 0) {
    result.reason = fmt::format("{} of {} elements are NaN", nan_count, n);
  } else if (inf_count > 0) {
    result.reason = fmt::format("{} of {} elements are infinite", inf_count, n);
  } else if (n > 0 && output_all_zero && !reference_all_zero) {
    result.reason = "the output is all zeros but the reference is not";
  } else if (result.matched_ratio < tolerance.required_matched_ratio) {
    result.reason = fmt::format(
        "{} of {} elements exceed atol {:g} + rtol {:g}*|ref| (matched {:.4f} < required {:g}); "
        "max abs error {:.3g}",
        failed, n, tolerance.max_atol, tolerance.max_rtol, result.matched_ratio,
        tolerance.required_matched_ratio, result.max_absolute_error);
  } else if (tolerance.max_error_cap && result.max_absolute_error > *tolerance.max_error_cap) {
    result.reason = fmt::format("max abs error {:.3g} exceeds the cap {:g}",
                                result.max_absolute_error, *tolerance.max_error_cap);
  }
  result.passed = result.reason.empty();
  return result;
}

int64_t count_poisoned(const HostTensor& output, const std::vector<uint8_t>& poison) {
  const std::size_t size = poison.size();
  int64_t count = 0;
  for (std::size_t offset = 0; offset + size <= output.bytes.size(); offset += size) {
    if (std::memcmp(output.bytes.data() + offset, poison.data(), size) == 0) ++count;
  }
  return count;
}

std::vector<uint8_t> poison_pattern(DType dtype, int variant) {
  switch (dtype) {
    case DType::Float64: return {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x7F};
    case DType::Float32: return {0x00, 0x00, 0xC0, 0x7F};
    case DType::Float16: return {0x00, 0x7E};
    case DType::BFloat16: return {0xC0, 0x7F};
    case DType::Float8E4M3FN: return {0x7F};
    case DType::Float8E5M2: return {0x7E};
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt8:
    case DType::Bool:
      return std::vector<uint8_t>(dtype_size(dtype), variant % 2 == 0 ? 0xA5 : 0x5A);
  }
  return std::vector<uint8_t>(dtype_size(dtype), 0xA5);
}

}  // namespace kernelarc

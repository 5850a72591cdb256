#include "eval/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "core/parallel_parts.h"

namespace kernelarc {

namespace {

bool is_negative_inf(double value) {
  return std::isinf(value) && value < 0;
}

/// One element of an output beside its reference, for a log a person reads.
struct ElementSample {
  int64_t index = 0;
  double got = 0, expected = 0;
};

/// The counts and maxima of one range of elements; ranges merge in order, so the result does
/// not depend on how many threads compared.
struct Tally {
  int64_t failed = 0, nan_count = 0, inf_count = 0;
  double max_absolute_error = 0, max_relative_error = 0;
  double max_reference = 0;  ///< the largest finite |ref|: the output's scale
  bool output_all_zero = true, reference_all_zero = true;
  /// Samples for the log: the first element that failed and the one with the largest error.
  std::optional<ElementSample> first_failure, largest_error;

  void note_failure(int64_t index, double out, double ref) {
    if (!first_failure) first_failure = ElementSample{index, out, ref};
  }

  void merge(const Tally& other) {
    if (!first_failure) first_failure = other.first_failure;
    if (other.largest_error && other.max_absolute_error > max_absolute_error)
      largest_error = other.largest_error;
    failed += other.failed;
    nan_count += other.nan_count;
    inf_count += other.inf_count;
    max_absolute_error = std::max(max_absolute_error, other.max_absolute_error);
    max_relative_error = std::max(max_relative_error, other.max_relative_error);
    max_reference = std::max(max_reference, other.max_reference);
    output_all_zero = output_all_zero && other.output_all_zero;
    reference_all_zero = reference_all_zero && other.reference_all_zero;
  }
};

Tally tally_range(TensorView output, TensorView reference, const Tolerance& tolerance,
                  int64_t begin, int64_t end) {
  constexpr int64_t kBlock = 2048;
  std::vector<double> outs(kBlock), refs(kBlock);
  const std::size_t out_size = dtype_size(output.dtype), ref_size = dtype_size(reference.dtype);
  Tally tally;
  for (int64_t block = begin; block < end; block += kBlock) {
    const int64_t count = std::min(kBlock, end - block);
    load_elements(output.dtype, output.bytes.data() + block * out_size, count, outs.data());
    load_elements(reference.dtype, reference.bytes.data() + block * ref_size, count, refs.data());
    for (int64_t i = 0; i < count; ++i) {
      const double out = outs[i], ref = refs[i];
      if (out != 0) tally.output_all_zero = false;
      if (ref != 0) tally.reference_all_zero = false;
      if (std::isnan(out) || std::isnan(ref)) {
        ++tally.nan_count;
        ++tally.failed;
        tally.note_failure(block + i, out, ref);
        continue;
      }
      if (std::isinf(out) || std::isinf(ref)) {
        const bool allowed =
            tolerance.allow_negative_inf && is_negative_inf(out) && is_negative_inf(ref);
        if (!allowed) {
          ++tally.inf_count;
          ++tally.failed;
          tally.note_failure(block + i, out, ref);
        }
        continue;
      }
      const double diff = std::fabs(out - ref);
      tally.max_reference = std::max(tally.max_reference, std::fabs(ref));
      if (diff > tally.max_absolute_error || !tally.largest_error) {
        tally.max_absolute_error = diff;
        tally.largest_error = ElementSample{block + i, out, ref};
      }
      tally.max_relative_error =
          std::max(tally.max_relative_error, diff / std::max(std::fabs(ref), tolerance.max_atol));
      if (diff > tolerance.max_atol + tolerance.max_rtol * std::fabs(ref)) {
        ++tally.failed;
        tally.note_failure(block + i, out, ref);
      }
    }
  }
  return tally;
}

/// Over the cores (core/parallel_parts.h): the guard compares every checked call of every
/// candidate, and a 64M-element output takes a second on one core.
Tally tally_all(TensorView output, TensorView reference, const Tolerance& tolerance) {
  constexpr std::size_t kPerPart = std::size_t{1} << 20;
  const auto n = static_cast<std::size_t>(output.numel());
  std::vector<Tally> tallies(kMaxParts);
  const std::size_t parts =
      run_in_parts(n, kPerPart, [&](std::size_t part, std::size_t begin, std::size_t end) {
        tallies[part] = tally_range(output, reference, tolerance, static_cast<int64_t>(begin),
                                    static_cast<int64_t>(end));
      });
  Tally total;
  for (std::size_t part = 0; part < parts; ++part) total.merge(tallies[part]);
  return total;
}

}  // namespace

double implicit_error_cap(const Tolerance& tolerance, double scale) {
  return kErrorCapFactor * (tolerance.max_atol + tolerance.max_rtol * scale);
}

CompareResult compare_output(TensorView output, TensorView reference, const Tolerance& tolerance) {
  CompareResult result;
  for (const DType dtype : {output.dtype, reference.dtype}) {
    if (dtype_is_packed(dtype)) {
      result.reason = fmt::format(
          "{} outputs cannot be compared: a byte holds two values, and SOL-ExecBench's "
          "tolerance applies to values",
          dtype_name(dtype));
      return result;
    }
  }
  const int64_t n = output.numel();
  if (n != reference.numel()) {  // a view reads past neither tensor
    result.reason = fmt::format("{} elements, but the reference has {}", n, reference.numel());
    return result;
  }
  const Tally tally = tally_all(output, reference, tolerance);
  const int64_t failed = tally.failed, nan_count = tally.nan_count, inf_count = tally.inf_count;
  const bool output_all_zero = tally.output_all_zero, reference_all_zero = tally.reference_all_zero;
  result.max_absolute_error = tally.max_absolute_error;
  result.max_relative_error = tally.max_relative_error;
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
  } else if (const double cap = implicit_error_cap(tolerance, tally.max_reference);
             !tolerance.max_error_cap && dtype_is_floating(output.dtype) &&
             result.max_absolute_error > cap) {
    // The matched ratio lets a share of elements miss the tolerance; none may miss it by far.
    result.reason = fmt::format(
        "max abs error {:.3g} exceeds the error cap {:.3g} ({:g} x (atol {:g} + rtol {:g} x the "
        "output's scale {:.3g})), though {:.4f} of the elements matched",
        result.max_absolute_error, cap, kErrorCapFactor, tolerance.max_atol, tolerance.max_rtol,
        tally.max_reference, result.matched_ratio);
  }
  result.passed = result.reason.empty();
  if (!result.passed) {
    // Where it goes wrong, and by how much: a layout bug reads differently from a rounding one.
    const auto sample = [](const char* what, const ElementSample& e) {
      return fmt::format("; {} element {}: got {:.6g}, expected {:.6g}", what, e.index, e.got,
                         e.expected);
    };
    if (tally.first_failure) result.reason += sample("first failing", *tally.first_failure);
    if (tally.largest_error && tally.max_absolute_error > 0)
      result.reason += sample("largest error at", *tally.largest_error);
  }
  return result;
}

int64_t count_poisoned(TensorView output, const std::vector<uint8_t>& poison) {
  const std::size_t size = poison.size();
  int64_t count = 0;
  for (std::size_t offset = 0; offset + size <= output.bytes.size(); offset += size) {
    if (std::memcmp(output.bytes.data() + offset, poison.data(), size) == 0) ++count;
  }
  return count;
}

std::vector<uint8_t> poison_pattern(DType dtype, int variant) {
  switch (dtype) {
    case DType::Float64:
      return {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x7F};
    case DType::Float32:
      return {0x00, 0x00, 0xC0, 0x7F};
    case DType::Float16:
      return {0x00, 0x7E};
    case DType::BFloat16:
      return {0xC0, 0x7F};
    case DType::Float8E4M3FN:
      return {0x7F};
    case DType::Float8E5M2:
      return {0x7E};
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt8:
    case DType::Bool:
    case DType::Float4E2M1:
    case DType::Float4E2M1FNx2:
      return std::vector<uint8_t>(dtype_size(dtype), variant % 2 == 0 ? 0xA5 : 0x5A);
  }
  return std::vector<uint8_t>(dtype_size(dtype), 0xA5);
}

}  // namespace kernelarc

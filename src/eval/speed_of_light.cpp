#include "eval/speed_of_light.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/tensor.h"

namespace kernelarc {

double problem_bytes(const Definition& def, const AxisValues& axes) {
  if (!def.ext.bytes.empty()) return static_cast<double>(evaluate_expr(def.ext.bytes, axes));
  double bytes = 0;
  auto add = [&](const TensorSpec& spec) {
    bytes += static_cast<double>(shape_numel(resolve_shape(spec, axes))) *
             static_cast<double>(dtype_size(spec.dtype));
  };
  std::for_each(def.inputs.begin(), def.inputs.end(), add);
  std::for_each(def.outputs.begin(), def.outputs.end(), add);
  return bytes;
}

double problem_flops(const Definition& def, const AxisValues& axes) {
  return def.ext.flops.empty() ? 0.0 : static_cast<double>(evaluate_expr(def.ext.flops, axes));
}

namespace {

/// Families whose FLOPs are matrix products, which SOLAR bounds by the tensor cores.
bool runs_on_tensor_cores(const std::string& op_family) {
  return op_family == "gemm" || op_family == "scaled_gemm" || op_family == "mlp" ||
         op_family == "attention";
}

}  // namespace

std::optional<ComputePeak> compute_peak(const Definition& def, const Calibration& calibration) {
  const bool on_cpu = calibration.device == "cpu";
  if (!on_cpu && runs_on_tensor_cores(def.ext.op_family) && !def.inputs.empty()) {
    const std::string dtype(dtype_name(def.inputs.front().dtype));
    const auto it = calibration.tensor_tflops.find(dtype);
    if (it != calibration.tensor_tflops.end() && it->second > 0)
      return ComputePeak{it->second * 1e12, fmt::format("{} tensor cores", dtype), true};
  }
  if (calibration.fp32_fma_tflops <= 0) return std::nullopt;
  return ComputePeak{calibration.fp32_fma_tflops * 1e12, "fp32 FMA", on_cpu};
}

SolBound speed_of_light(const Definition& def, const AxisValues& axes,
                        const std::optional<Calibration>& calibration) {
  if (!calibration) {
    return {std::nullopt, "no calibration for this device (run `kernelarc calibrate`)"};
  }
  if (calibration->copy_bandwidth_gbs <= 0) return {std::nullopt, "calibration lacks bandwidth"};
  const double bytes = problem_bytes(def, axes);
  const double flops = problem_flops(def, axes);
  const double memory_s = bytes / (calibration->copy_bandwidth_gbs * 1e9);
  double compute_s = 0;
  if (const auto peak = compute_peak(def, *calibration); peak && peak->bounds_sol && flops > 0)
    compute_s = flops / peak->flops_per_second;
  const bool memory_bound = memory_s >= compute_s;
  return {
      std::max(memory_s, compute_s) * 1e3,
      fmt::format("{}: {:.4g} MB at {:.0f} GB/s, {:.4g} GFLOP", memory_bound ? "memory" : "compute",
                  bytes * 1e-6, calibration->copy_bandwidth_gbs, flops * 1e-9)};
}

}  // namespace kernelarc

#include "eval/speed_of_light.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/tensor.h"

namespace kernelarc {

namespace {

double declared_bytes(const Definition& def, const AxisValues& axes) {
  double bytes = 0;
  auto add = [&](const TensorSpec& spec) {
    bytes += static_cast<double>(shape_numel(resolve_shape(spec, axes))) *
             static_cast<double>(dtype_size(spec.dtype));
  };
  std::for_each(def.inputs.begin(), def.inputs.end(), add);
  std::for_each(def.outputs.begin(), def.outputs.end(), add);
  return bytes;
}

std::optional<double> compute_peak_flops(const Definition& def, const Calibration& calibration) {
  if (calibration.device == "cpu") {
    if (calibration.fp32_fma_tflops <= 0) return std::nullopt;
    return calibration.fp32_fma_tflops * 1e12;
  }
  if (def.ext.op_family != "gemm" || def.inputs.empty()) return std::nullopt;
  const auto it = calibration.tensor_tflops.find(std::string(dtype_name(def.inputs.front().dtype)));
  if (it == calibration.tensor_tflops.end() || it->second <= 0) return std::nullopt;
  return it->second * 1e12;
}

}  // namespace

SolBound speed_of_light(const Definition& def, const AxisValues& axes,
                        const std::optional<Calibration>& calibration) {
  if (!calibration) {
    return {std::nullopt, "no calibration for this device (run `kernelarc calibrate`)"};
  }
  if (calibration->copy_bandwidth_gbs <= 0) return {std::nullopt, "calibration lacks bandwidth"};
  const double bytes = def.ext.bytes.empty() ? declared_bytes(def, axes)
                                             : static_cast<double>(evaluate_expr(def.ext.bytes, axes));
  const double flops = def.ext.flops.empty() ? 0.0
                                             : static_cast<double>(evaluate_expr(def.ext.flops, axes));
  const double memory_s = bytes / (calibration->copy_bandwidth_gbs * 1e9);
  double compute_s = 0;
  if (const auto peak = compute_peak_flops(def, *calibration); peak && flops > 0) {
    compute_s = flops / *peak;
  }
  const bool memory_bound = memory_s >= compute_s;
  return {std::max(memory_s, compute_s) * 1e3,
          fmt::format("{}: {:.4g} MB at {:.0f} GB/s, {:.4g} GFLOP", memory_bound ? "memory" : "compute",
                      bytes * 1e-6, calibration->copy_bandwidth_gbs, flops * 1e-9)};
}

}  // namespace kernelarc

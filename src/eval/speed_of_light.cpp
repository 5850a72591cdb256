#include "eval/speed_of_light.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/dtype.h"

namespace kernelarc {

double problem_bytes(const Definition& def, const AxisValues& axes) {
  if (!def.ext.bytes.empty()) return static_cast<double>(evaluate_expr(def.ext.bytes, axes));
  return tensor_bytes(def, axes);
}

double problem_flops(const Definition& def, const AxisValues& axes) {
  return def.ext.flops.empty() ? 0.0 : static_cast<double>(evaluate_expr(def.ext.flops, axes));
}

namespace {

/// Problems whose FLOPs are matrix products, which SOLAR bounds by the tensor cores: the GEMM
/// families, and a fused kernel plan with matmul kernels on half-precision inputs.
bool runs_on_tensor_cores(const Definition& def) {
  const std::string& family = def.ext.op_family;
  if (family == "gemm" || family == "scaled_gemm" || family == "mlp" || family == "attention" ||
      family == "attention_nvfp4" || family == "moe" || family == "moe_backward")
    return true;
  if (family != "fused" || def.inputs.empty()) return false;
  const DType dtype = def.inputs.front().dtype;
  if (dtype != DType::BFloat16 && dtype != DType::Float16) return false;
  const auto kernels = def.ext.op_params.find("kernels");
  if (kernels == def.ext.op_params.end() || !kernels->is_array()) return false;
  return std::any_of(kernels->begin(), kernels->end(), [](const OrderedJson& kernel) {
    return kernel.is_object() && kernel.value("kind", std::string()) == "matmul";
  });
}

/// Bits of one value: a float4 byte packs two.
int value_bits(DType dtype) {
  return dtype_is_packed(dtype) ? 4 : 8 * dtype_size(dtype);
}

bool tensor_cores_measured(const Calibration& calibration, DType dtype) {
  const auto peak = calibration.tensor_tflops.find(std::string(dtype_name(dtype)));
  return peak != calibration.tensor_tflops.end() && peak->second > 0;
}

/// The dtype the products' operands are read in: the narrowest input's, where the calibration
/// measured its tensor cores (an FP8 MoE's first input is its float32 router logits, its products
/// run on e4m3). A narrower operand without them (an NVFP4 cache on Hopper: no FP4 tensor cores)
/// is dequantized into the narrowest measured type of at least 16 bits beside it (the bf16
/// query), whatever its scales' type (e4m3 scales are not an operand). Else the first input's.
std::string_view operand_dtype(const Definition& def, const Calibration& calibration) {
  std::optional<DType> narrowest;
  for (const TensorSpec& input : def.inputs)
    if (!narrowest || value_bits(input.dtype) < value_bits(*narrowest)) narrowest = input.dtype;
  if (narrowest && tensor_cores_measured(calibration, *narrowest)) return dtype_name(*narrowest);
  std::optional<DType> dequantized_into;
  for (const TensorSpec& input : def.inputs) {
    if (value_bits(input.dtype) < 16 || !tensor_cores_measured(calibration, input.dtype)) continue;
    if (!dequantized_into || value_bits(input.dtype) < value_bits(*dequantized_into))
      dequantized_into = input.dtype;
  }
  return dtype_name(dequantized_into.value_or(def.inputs.front().dtype));
}

}  // namespace

std::optional<ComputePeak> compute_peak(const Definition& def, const Calibration& calibration) {
  std::optional<std::string_view> tensor_core_dtype;
  if (runs_on_tensor_cores(def) && !def.inputs.empty())
    tensor_core_dtype = operand_dtype(def, calibration);
  return backend_for(calibration.device).compute_peak(calibration, tensor_core_dtype);
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

double sol_score(double kernel_ms, double baseline_ms, double sol_ms) {
  if (kernel_ms <= sol_ms) return 1.0;
  const double headroom = baseline_ms - sol_ms;
  if (headroom <= 0) return 0.0;
  return 1.0 / (1.0 + (kernel_ms - sol_ms) / headroom);
}

std::optional<double> faster_baseline_ms(const std::optional<double>& eager_ms,
                                         const std::optional<double>& compiled_ms) {
  if (eager_ms && compiled_ms) return std::min(*eager_ms, *compiled_ms);
  return eager_ms ? eager_ms : compiled_ms;
}

std::optional<double> sol_score(double kernel_ms, const std::optional<double>& eager_ms,
                                const std::optional<double>& compiled_ms,
                                const std::optional<double>& sol_ms) {
  const auto baseline_ms = faster_baseline_ms(eager_ms, compiled_ms);
  if (!baseline_ms || !sol_ms) return std::nullopt;
  return sol_score(kernel_ms, *baseline_ms, *sol_ms);
}

bool sol_bound_beaten(double kernel_ms, const std::optional<double>& sol_ms) {
  return sol_ms && kernel_ms < *sol_ms;
}

}  // namespace kernelarc

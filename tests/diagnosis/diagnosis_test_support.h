// Synthetic traces and an H200-like calibration for the diagnosis tests.
#pragma once

#include <filesystem>
#include <string>

#include "backend/calibrate.h"
#include "core/problem.h"
#include "eval/trace.h"

namespace kernelarc::testing {

inline const std::filesystem::path kProblems =
    std::filesystem::path(KERNELARC_SOURCE_DIR) / "problems";

/// Round numbers of the order an H200 calibrates to.
inline Calibration gpu_calibration() {
  Calibration calibration;
  calibration.device = "cuda:0";
  calibration.copy_bandwidth_gbs = 4000;
  calibration.tensor_tflops = {{"bfloat16", 800}, {"float16", 800}};
  calibration.fp32_fma_tflops = 60;
  calibration.sm_count = 132;
  calibration.l2_bytes = 60 << 20;
  return calibration;
}

inline Calibration cpu_calibration() {
  Calibration calibration;
  calibration.device = "cpu";
  calibration.copy_bandwidth_gbs = 20;
  calibration.fp32_fma_tflops = 0.2;
  calibration.cores = 2;
  return calibration;
}

/// One kernel record as the guard stores it in extra["kernels"].
inline OrderedJson kernel_record(const std::string& name, int grid, int block, int registers,
                                 double occupancy, const std::string& limited_by = "warps") {
  return {{"name", name},
          {"grid", {grid, 1, 1}},
          {"block", {block, 1, 1}},
          {"cluster", {0, 0, 0}},
          {"registers_per_thread", registers},
          {"static_shared_bytes", 0},
          {"dynamic_shared_bytes", 0},
          {"local_bytes_per_thread", 0},
          {"launches", 1},
          {"theoretical_occupancy",
           {{"blocks_per_sm", 1}, {"fraction", occupancy}, {"limited_by", limited_by}}}};
}

/// A passed trace with the given median and kernels, timed by CUPTI.
inline Trace gpu_trace(double median_ms, OrderedJson kernels) {
  Trace trace;
  trace.solution = "candidate";
  trace.clock = "cupti";
  trace.latency_ms = TimingSummary{.samples = 50, .median = median_ms};
  trace.extra["kernels"] = std::move(kernels);
  return trace;
}

/// The median that reaches `fraction` of the calibrated copy bandwidth for `bytes`.
inline double median_ms_at_bandwidth(double bytes, double fraction, double bandwidth_gbs) {
  return bytes / (fraction * bandwidth_gbs * 1e9) * 1e3;
}

/// The Llama-3-8B RMSNorm of the CUDA suite, the problem most diagnosis tests read.
inline const Definition& rmsnorm() {
  static const Definition def = load_definition(kProblems / "cuda/rmsnorm_bf16/definition.json");
  return def;
}

/// Its axes at `batch` rows.
inline AxisValues rows(int64_t batch) {
  return {{"batch_size", batch}, {"hidden_size", 4096}};
}

}  // namespace kernelarc::testing

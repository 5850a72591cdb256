// The speed-of-light bound T_SOL = max(FLOPs / peak, bytes / bandwidth), with the device's
// calibrated ceilings (never datasheet numbers).
#pragma once

#include <optional>
#include <string>

#include "backend/backend.h"
#include "core/problem.h"

namespace kernelarc {

/// The definition's kernelarc.bytes expression, else every input and output counted once.
double problem_bytes(const Definition& def, const AxisValues& axes);
/// The definition's kernelarc.flops expression; 0 when absent.
double problem_flops(const Definition& def, const AxisValues& axes);

/// The ceiling a problem's arithmetic is measured against: tensor cores of the first input's
/// dtype for GEMM-family problems (and fused plans with matmul kernels on bfloat16 / float16
/// inputs) on a GPU, FP32 FMA on a CPU (both bound T_SOL); where T_SOL
/// has none (a GPU problem off the tensor cores), the FP32 FMA rate, since such a kernel's
/// arithmetic runs on the CUDA cores (a diagnosis reports it; T_SOL ignores it). nullopt when
/// the calibration lacks the rate. The calibration's backend (Backend::compute_peak) decides.
std::optional<ComputePeak> compute_peak(const Definition& def, const Calibration& calibration);

struct SolBound {
  std::optional<double> ms;
  std::string note;  ///< how it was derived, or why there is none
};

/// Bytes come from the definition's kernelarc.bytes expression, else every input and output
/// counted once; FLOPs from kernelarc.flops (0 when absent). The compute ceiling is the tensor
/// core rate of the first input's dtype on GPUs (GEMM-family problems only) and the FP32 FMA rate
/// on CPUs.
SolBound speed_of_light(const Definition& def, const AxisValues& axes,
                        const std::optional<Calibration>& calibration);

/// S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)), never above 1: a kernel at or below T_SOL scores
/// 1 (and beats the bound, see sol_bound_beaten); with T_b at or below T_SOL, 1 or 0.
double sol_score(double kernel_ms, double baseline_ms, double sol_ms);

/// T_b: the faster of the PyTorch baselines that ran; nullopt when neither did.
std::optional<double> faster_baseline_ms(const std::optional<double>& eager_ms,
                                         const std::optional<double>& compiled_ms);

/// S against T_b = the faster baseline; nullopt without a baseline or a T_SOL. Every SOL score
/// kernelarc reports (a trace's, a benchmark's) is this one.
std::optional<double> sol_score(double kernel_ms, const std::optional<double>& eager_ms,
                                const std::optional<double>& compiled_ms,
                                const std::optional<double>& sol_ms);

/// Whether a measured time is below T_SOL. No honest kernel beats a true bound, so the bound is
/// wrong (a calibration that under-measured the bandwidth or peak), not the kernel faster.
bool sol_bound_beaten(double kernel_ms, const std::optional<double>& sol_ms);

/// What to tell a user whose kernel beat the bound.
inline constexpr const char* kSolBoundBeatenAdvice =
    "faster than the speed-of-light bound: the bound is wrong (the calibration under-measured "
    "this device); SOL scores are capped at 1; run `kernelarc calibrate` for this device again";

}  // namespace kernelarc

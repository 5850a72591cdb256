// The speed-of-light bound T_SOL = max(FLOPs / peak, bytes / bandwidth), with the device's
// calibrated ceilings (never datasheet numbers).
#pragma once

#include <optional>
#include <string>

#include "backend/calibrate.h"
#include "core/problem.h"

namespace kernelarc {

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

}  // namespace kernelarc

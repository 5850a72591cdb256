// The guard's calibration when the workspace has none: without measured ceilings there is no
// speed-of-light floor, and a candidate that forges a 500x speedup would pass with only a note.
#pragma once

#include <optional>

#include "backend/calibrate.h"
#include "eval/guard.h"

namespace kernelarc {

/// Measures the guard's device and saves the result in its workspace, as `kernelarc calibrate`
/// does: the CPU in this process, a GPU in a `kernelarc calibrate` child (no CUDA context stays in
/// the guard's process). nullopt, with the reason on stderr, when the measurement fails: the
/// traces then say that no calibration bounds them.
std::optional<Calibration> calibrate_automatically(const GuardOptions& options);

}  // namespace kernelarc

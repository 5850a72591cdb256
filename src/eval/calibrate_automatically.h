// The guard's calibration when the workspace has none: without measured ceilings there is no
// speed-of-light floor, and a candidate that forges a 500x speedup would pass with only a note.
//
// A calibration measured automatically is measured whenever the first evaluation happens, on a
// machine that may be busy (ctest -j2 on two cores measured 4-5 GB/s where a quiet run measures
// 21.5): its ceilings can be several times too low, so T_SOL several times too high. Such a
// floor must not refuse an honest kernel, and must still refuse a forged speedup of 10x or more
// beyond what the machine can do: the measurement is repeated, spaced out, while it finds the
// machine busy, and the best kept; and the floor's verdict on it takes a wide margin
// (floor_margin).
#pragma once

#include <filesystem>
#include <optional>

#include "backend/calibrate.h"
#include "eval/guard.h"

namespace kernelarc {

/// Raised when a measurement changes: a machine copy an earlier method measured is not reused (2:
/// the CPU's passes are timed by their own threads; method 1 could report 26 TB/s on a busy
/// machine, and that copy stayed until the machine rebooted).
inline constexpr int kMeasurementMethod = 2;

/// Marks a calibration the guard measured automatically (Calibration::environment).
inline constexpr const char* kAutomaticCalibrationKey = "measured_by";

/// Where the guard keeps a copy of what it measured automatically, for every workspace on this
/// machine until it reboots: $XDG_CACHE_HOME (else ~/.cache)/kernelarc/calibration/<boot id>
/// /method-<kMeasurementMethod>, laid out like a workspace. Each measurement takes seconds (up to
/// about 11 on a busy CPU), and every fresh workspace would pay it again for the same hardware.
/// Only this user can write there; a candidate's sandbox cannot. nullopt without a boot id or a
/// home.
std::optional<std::filesystem::path> machine_calibrations();

/// The machine's copy (machine_calibrations()) saved into the workspace, when there is one.
/// Otherwise measures the guard's device and saves the result in its workspace and the machine's
/// copy, as `kernelarc calibrate` does: the CPU in this process (measured again, spaced out, up
/// to 3 times while the machine is busy, and the best kept), a GPU in a `kernelarc calibrate`
/// child (no CUDA context stays in the guard's process). One line on stderr says which. nullopt,
/// with the reason on stderr, when the measurement fails: the traces then say that no
/// calibration bounds them.
std::optional<Calibration> calibrate_automatically(const GuardOptions& options);

/// The share of T_SOL below which a median is refused as impossible: `configured`
/// (GuardOptions::sol_margin) for a calibration made on purpose (`kernelarc calibrate`), and at
/// most 0.12 for one the guard measured automatically on the CPU, which may be several times
/// too pessimistic: a forgery 10x below the speed of light is still refused there.
double floor_margin(const std::optional<Calibration>& calibration, double configured);

}  // namespace kernelarc

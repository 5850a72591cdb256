// The speed-of-light floor's margin (calibrate_automatically.h): tight on a calibration made on
// purpose, wide on one the guard measured automatically on a possibly busy CPU, and in both cases
// a forgery 10x faster than the machine can go is refused.
#include <gtest/gtest.h>

#include "eval/calibrate_automatically.h"

namespace kernelarc {
namespace {

Calibration cpu_calibration(bool automatic) {
  Calibration calibration;
  calibration.device = "cpu";
  calibration.copy_bandwidth_gbs = 20;
  if (automatic) calibration.environment[kAutomaticCalibrationKey] = "the guard";
  return calibration;
}

/// Whether the floor refuses `median_ms` against a T_SOL of `sol_ms`, as the guard decides.
bool refused(double median_ms, double sol_ms, const Calibration& calibration) {
  return median_ms < floor_margin(calibration, 0.8) * sol_ms;
}

TEST(FloorMargin, IsTheConfiguredOneForACalibrationMadeOnPurpose) {
  EXPECT_DOUBLE_EQ(floor_margin(cpu_calibration(false), 0.8), 0.8);
  EXPECT_DOUBLE_EQ(floor_margin(std::nullopt, 0.8), 0.8);
  Calibration gpu = cpu_calibration(true);
  gpu.device = "cuda:0";  // a GPU's bandwidth does not follow the host's load
  EXPECT_DOUBLE_EQ(floor_margin(gpu, 0.8), 0.8);
}

TEST(FloorMargin, AnAutomaticCalibrationOnABusyMachineRefusesNoHonestKernel) {
  // True T_SOL 1 ms; the honest kernel runs at 0.84 ms (copies are not the fastest traffic); the
  // busy machine measured 5x too little bandwidth, so the measured T_SOL is 5 ms.
  EXPECT_FALSE(refused(0.84, 5.0, cpu_calibration(true)));
  EXPECT_TRUE(refused(0.84, 5.0, cpu_calibration(false)));  // what a tight margin would do
}

TEST(FloorMargin, AForgeryTenTimesFasterThanTheMachineIsStillRefused) {
  for (double pessimism : {1.0, 2.0, 5.0}) {
    SCOPED_TRACE(pessimism);
    EXPECT_TRUE(refused(0.1, pessimism * 1.0, cpu_calibration(true)));
  }
}

}  // namespace
}  // namespace kernelarc

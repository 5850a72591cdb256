// `kernelarc calibrate`: measures the device's real ceilings (bandwidth, FMA and tensor-core
// rates) and stores them in the workspace for the speed-of-light model and the diagnosis.
#include <iostream>

#include <fmt/format.h>

#include "app/table.h"
#include "backend/backend.h"
#include "backend/calibrate.h"
#include "cli/commands.h"
#include "core/error.h"

namespace kernelarc {

namespace {

int run_calibrate(const std::string& device, const std::string& workspace) {
  calibration_path(workspace, device);  // rejects anything but "cpu" and "cuda:N"
  const Calibration calibration = backend_for(device).calibrate();
  save_calibration(workspace, calibration);

  std::cout << fmt::format("device {}: {}\n", calibration.device, calibration.description);
  TextTable table({"measure", "value"});
  table.add_row({"memory bandwidth (best method)",
                 fmt::format("{:.1f} GB/s", calibration.copy_bandwidth_gbs)});
  table.add_row({"fp32 FMA", fmt::format("{:.2f} TFLOP/s", calibration.fp32_fma_tflops)});
  for (const auto& [dtype, tflops] : calibration.tensor_tflops) {
    table.add_row({"tensor core " + dtype, fmt::format("{:.1f} TFLOP/s", tflops)});
  }
  if (calibration.sm_count > 0) table.add_row({"SMs", std::to_string(calibration.sm_count)});
  if (calibration.l2_bytes > 0) {
    table.add_row({"L2", fmt::format("{:.1f} MiB", calibration.l2_bytes / 1048576.0)});
  }
  if (calibration.llc_bytes > 0) {
    table.add_row(
        {"last-level cache", fmt::format("{:.1f} MiB", calibration.llc_bytes / 1048576.0)});
  }
  if (calibration.cores > 0) table.add_row({"cores", std::to_string(calibration.cores)});
  for (const auto& [key, value] : calibration.environment) table.add_row({key, value});
  table.print(std::cout);
  std::cout << fmt::format("saved to {}/calibration/\n", workspace);
  return 0;
}

}  // namespace

CommandRunner add_calibrate_command(CLI::App& app) {
  auto device = std::make_shared<std::string>("cpu");
  auto workspace = std::make_shared<std::string>(".kernelarc");
  auto* cmd = app.add_subcommand("calibrate", "measure the device's bandwidth and peak rates");
  cmd->add_option("--device", *device, "cpu or cuda:N")->capture_default_str();
  cmd->add_option("--workspace", *workspace, "where the calibration is stored")
      ->capture_default_str();
  return [device, workspace] { return run_calibrate(*device, *workspace); };
}

}  // namespace kernelarc

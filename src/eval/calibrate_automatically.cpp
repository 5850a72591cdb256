#include "eval/calibrate_automatically.h"

#include <chrono>
#include <iostream>

#include "backend/process.h"
#include "core/paths.h"

namespace kernelarc {

std::optional<Calibration> calibrate_automatically(const GuardOptions& options) {
  std::cerr << "kernelarc: no calibration for " << options.device << " in "
            << options.workspace.string()
            << ": measuring the device now (kernelarc calibrate), so that the speed-of-light "
               "floor applies\n";
  try {
    if (options.device == "cpu") {
      save_calibration(options.workspace, calibrate_cpu());
    } else {
      const std::filesystem::path executable =
          options.worker_executable.empty() ? self_executable() : options.worker_executable;
      const CommandResult result =
          run_command({executable.string(), "calibrate", "--device", options.device, "--workspace",
                       options.workspace.string()},
                      std::chrono::minutes(10));
      if (result.timed_out || result.status.signaled || result.status.exit_code != 0) {
        std::cerr << "kernelarc: the automatic calibration failed:\n" << result.output << "\n";
        return std::nullopt;
      }
    }
    return load_calibration(options.workspace, options.device);
  } catch (const std::exception& error) {
    std::cerr << "kernelarc: the automatic calibration failed: " << error.what() << "\n";
    return std::nullopt;
  }
}

}  // namespace kernelarc

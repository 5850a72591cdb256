#include "eval/calibrate_automatically.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "backend/backend.h"
#include "backend/process.h"
#include "backend/worker/worker_accounting.h"
#include "core/paths.h"

namespace kernelarc {
namespace {

// Measurements of the CPU at most, and the pause between them: a burst of other work (a compiler,
// a neighbouring test) that halves the bandwidth for a second rarely spans all of them. One
// measurement takes about 3.5 s, so another is made only when the last one saw the machine busy:
// its calling thread waited for a core for more than kBusyShare of the measurement.
constexpr int kCpuMeasurements = 3;
constexpr std::chrono::milliseconds kCpuSpacing{500};
constexpr double kBusyShare = 0.05;
// The floor's margin on an automatic CPU calibration (floor_margin). A forgery 10x faster than
// the machine can go reports at most 0.1 x the true T_SOL, which the measured T_SOL only exceeds:
// refused. An honest kernel is refused only when the measured ceiling is over 8x too low (a
// loaded machine measured 4-5x; the honest best has come within 0.84 x a quiet T_SOL, as copies
// are not the fastest traffic).
constexpr double kAutomaticCpuMargin = 0.12;

/// One CPU measurement, and whether other work competed with it for the cores: whether this
/// process's threads (the measurement's, where they outlive it) waited for a core for more than
/// kBusyShare of its wall time.
Calibration measure_cpu(bool& busy) {
  const TaskTimes before = read_task_times(getpid());
  const auto start = std::chrono::steady_clock::now();
  Calibration measured = calibrate_cpu();
  const double wall_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  const TaskTimes after = read_task_times(getpid());
  double waited_ns = 0;
  for (const auto& [tid, ignored] : after.wait_ns)
    waited_ns += run_queue_wait_of(before, after, tid);
  busy = !before.valid || !after.valid || waited_ns > kBusyShare * wall_ns;
  return measured;
}

/// The best of the CPU measurements made until one saw a quiet machine: each ceiling is the
/// highest seen (load only lowers a measured ceiling, so the highest is the closest).
Calibration best_cpu_calibration() {
  bool busy = false;
  Calibration best = measure_cpu(busy);
  int measurements = 1;
  for (; busy && measurements < kCpuMeasurements; ++measurements) {
    std::this_thread::sleep_for(kCpuSpacing);
    const Calibration again = measure_cpu(busy);
    best.copy_bandwidth_gbs = std::max(best.copy_bandwidth_gbs, again.copy_bandwidth_gbs);
    best.fp32_fma_tflops = std::max(best.fp32_fma_tflops, again.fp32_fma_tflops);
  }
  best.environment[kAutomaticCalibrationKey] = "the guard, automatically (the best of " +
                                               std::to_string(measurements) +
                                               " measurement(s); the machine may have been busy)";
  return best;
}

}  // namespace

std::optional<std::filesystem::path> machine_calibrations() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!(boot >> boot_id) || boot_id.empty()) return std::nullopt;
  std::filesystem::path base;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache) {
    base = cache;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::filesystem::path(home) / ".cache";
  } else {
    return std::nullopt;
  }
  return base / "kernelarc" / "calibration" / boot_id /
         ("method-" + std::to_string(kMeasurementMethod));
}

std::optional<Calibration> calibrate_automatically(const GuardOptions& options) {
  const auto machine = machine_calibrations();
  try {
    if (machine) {
      if (auto known = load_calibration(*machine, options.device)) {
        std::cerr << "kernelarc: no calibration for " << options.device << " in "
                  << options.workspace.string() << ": using the one measured automatically on "
                  << "this machine since it booted (" << machine->string() << ")\n";
        save_calibration(options.workspace, *known);
        return known;
      }
    }
  } catch (const std::exception&) {
    // A malformed or unreadable machine copy is measured afresh below.
  }
  std::cerr << "kernelarc: no calibration for " << options.device << " in "
            << options.workspace.string()
            << ": measuring the device now (kernelarc calibrate), so that the speed-of-light "
               "floor applies\n";
  try {
    if (backend_for(options.device).kind() == DeviceKind::Cpu) {
      save_calibration(options.workspace, best_cpu_calibration());
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
    auto calibration = load_calibration(options.workspace, options.device);
    if (calibration && machine) {
      std::error_code ignored;  // the machine copy only saves time; without it, measure again
      std::filesystem::create_directories(*machine, ignored);
      try {
        save_calibration(*machine, *calibration);
      } catch (const std::exception&) {
      }
    }
    return calibration;
  } catch (const std::exception& error) {
    std::cerr << "kernelarc: the automatic calibration failed: " << error.what() << "\n";
    return std::nullopt;
  }
}

double floor_margin(const std::optional<Calibration>& calibration, double configured) {
  if (calibration && backend_for(calibration->device).kind() == DeviceKind::Cpu &&
      calibration->environment.count(kAutomaticCalibrationKey))
    return std::min(configured, kAutomaticCpuMargin);
  return configured;
}

}  // namespace kernelarc

// The CPU backend: host compiler, host memory, steady-clock timing, the CPU's calibration.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/backend.h"
#include "backend/process.h"

namespace kernelarc {

namespace {

/// The first line of `<compiler> --version` ("g++ (Debian 12.2.0-14) 12.2.0").
std::string compiler_line(const std::string& compiler) {
  const std::optional<std::string> path = find_executable(compiler);
  if (!path) return compiler + " (not found)";
  const CommandResult result = run_command({*path, "--version"}, std::chrono::seconds(30));
  const std::string line = result.output.substr(0, result.output.find('\n'));
  return line.empty() ? compiler : line;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() : Backend("cpu") {}

  DeviceKind kind() const override { return DeviceKind::Cpu; }

  bool builds_language(std::string_view language) const override {
    return language == "cpp" || language == "c" || language == "cpu";
  }
  std::string languages_text() const override { return "the CPU runs \"cpp\""; }

  BackendBuild compile(const Solution& solution, const Definition& /*definition*/,
                       const CompileRequest& request) const override {
    CpuCompileOptions options = request.host;
    options.cache_dir = request.cache_dir;
    return {compile_cpu_solution(solution, options),
            fmt::format("{} {}", options.compiler, fmt::join(options.flags, " "))};
  }

  std::string compiler_text() const override {
    const CpuCompileOptions defaults;
    return fmt::format(
        "{}, run as `{} -std=c++20 -shared -fPIC {}` followed by the solution's cflags",
        compiler_line(defaults.compiler), defaults.compiler, fmt::join(defaults.flags, " "));
  }

  Calibration calibrate() const override { return calibrate_cpu(); }
  std::unique_ptr<Device> make_device(bool /*trace_activity*/) const override {
    return make_cpu_device();
  }

  // A CPU kernel's arithmetic runs on the FMA units, whatever the problem: the FMA rate bounds it.
  std::optional<ComputePeak> compute_peak(const Calibration& calibration,
                                          std::optional<std::string_view>) const override {
    if (calibration.fp32_fma_tflops <= 0) return std::nullopt;
    return ComputePeak{calibration.fp32_fma_tflops * 1e12, "fp32 FMA", true};
  }

  // torch.compile on the CPU is not the baseline a CPU user runs: only the eager one is timed.
  bool times_compiled_baseline() const override { return false; }
  // The compiler would take the cores the measured kernel runs on.
  bool builds_ahead() const override { return false; }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(std::string_view device) {
  if (device != "cpu") return nullptr;
  return std::make_unique<CpuBackend>();
}

}  // namespace kernelarc

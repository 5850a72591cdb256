// The parent-side face of one kind of device: what the layers above the backend need of it, so
// that none of them compares device names. One Backend serves one --device ("cpu", "cuda:0"),
// chosen once by backend_for; the worker-side face is the Device it makes.
//
// Adding a backend (HIP, a CPU of another ISA) is a folder under src/backend/ holding its
// Backend, compiler, Device and calibration (with a backend.cmake when its build needs a
// toolkit), plus its line in backend_registry.cpp.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "backend/calibrate.h"
#include "backend/compile_result.h"
#include "backend/cpu/cpu_compiler.h"
#include "backend/device.h"
#include "core/device_kind.h"
#include "core/problem.h"

namespace kernelarc {

/// What a compile needs besides the solution: where the build cache is and what the device is.
struct CompileRequest {
  std::filesystem::path cache_dir;  ///< builds by content hash, shared by every backend
  /// The host compiler and its flags (--cflags replaces them; $CXX chooses the compiler): the
  /// CPU backend builds with them, a GPU backend ignores them.
  CpuCompileOptions host;
  std::string device_arch;  ///< the GPU's architecture ("sm_90"); empty on a CPU or unknown
};

/// A compiled solution and, for the trace, what built it ("c++ -O3 ...", "nvrtc sm_90a").
struct BackendBuild {
  CompileResult result;
  std::string compiler;
};

/// The arithmetic ceiling a problem's work is measured against.
struct ComputePeak {
  double flops_per_second = 0;
  std::string what;         ///< "bfloat16 tensor cores", "fp32 FMA"
  bool bounds_sol = false;  ///< whether speed_of_light counts this peak in T_SOL
};

class Backend {
 public:
  explicit Backend(std::string device) : device_(std::move(device)) {}
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  /// The device as --device names it, canonical ("cpu", "cuda:0"): stored with runs and
  /// calibrations, passed to the worker.
  const std::string& device() const { return device_; }
  virtual DeviceKind kind() const = 0;
  /// "cpu" or "cuda": the templates' target, PyTorch's device type (device_kind_name).
  std::string kind_name() const { return std::string(device_kind_name(kind())); }

  /// Whether this backend builds solutions written in `language` ("cpp", "cuda_cpp").
  virtual bool builds_language(std::string_view language) const = 0;
  /// The languages it builds, in words, for the error that rejects a solution.
  virtual std::string languages_text() const = 0;
  /// Compiles into the build cache. A compile error is a result (ok == false), not a throw.
  virtual BackendBuild compile(const Solution& solution, const Definition& definition,
                               const CompileRequest& request) const = 0;
  /// The compiler and its default flags in words, for a code synthesizer's prompt.
  virtual std::string compiler_text() const = 0;

  /// Measures the device's ceilings (kernelarc calibrate); InternalError where it cannot.
  virtual Calibration calibrate() const = 0;
  /// The worker's Device. Without `trace_activity` a GPU is timed without activity tracing
  /// (for a process profiled by Nsight Compute). InternalError where the device is unusable.
  virtual std::unique_ptr<Device> make_device(bool trace_activity) const = 0;

  /// The ceiling a problem's arithmetic is measured against, from the calibration:
  /// `tensor_core_dtype` is the dtype of a matrix product that may run on tensor cores (none
  /// when the problem has none). nullopt when the calibration lacks the rate.
  virtual std::optional<ComputePeak> compute_peak(
      const Calibration& calibration, std::optional<std::string_view> tensor_core_dtype) const = 0;

  /// Whether the PyTorch reference's torch.compile baseline is timed besides the eager one.
  virtual bool times_compiled_baseline() const = 0;
  /// Whether a search compiles its next candidates on other threads while the device measures:
  /// not where the compiler would compete with the measured kernel for the same cores.
  virtual bool builds_ahead() const = 0;

 private:
  std::string device_;
};

/// The backend of a --device value ("cpu", "cuda" for cuda:0, "cuda:N"), made once per name and
/// kept for the process's life. InputError naming --device for any other name.
const Backend& backend_for(std::string_view device);

}  // namespace kernelarc

// The CUDA backend: nvcc or NVRTC builds, one GPU per device ordinal, CUPTI timing, the GPU's
// calibration. Built with or without the toolkit (the stubs then throw when a GPU is used).
#include <fmt/format.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_compiler.h"

namespace kernelarc {

namespace {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int ordinal) : Backend(fmt::format("cuda:{}", ordinal)), ordinal_(ordinal) {}

  DeviceKind kind() const override { return DeviceKind::Cuda; }

  bool builds_language(std::string_view language) const override {
    return language == "cuda_cpp" || language == "cuda" || language == "cublas" ||
           language == "cutlass";
  }
  std::string languages_text() const override { return "CUDA devices run \"cuda_cpp\""; }

  BackendBuild compile(const Solution& solution, const Definition& definition,
                       const CompileRequest& request) const override {
    CudaCompileOptions options;
    options.cache_dir = request.cache_dir;
    options.device_arch = request.device_arch;
    const std::string arch = select_cuda_arch(solution, options.device_arch);
    const bool nvrtc = is_device_only_solution(solution);
    return {compile_cuda_solution(solution, definition, options),
            (nvrtc ? "nvrtc " : "nvcc ") + arch};
  }

  std::string compiler_text() const override {
    return "nvcc (or NVRTC for a device-only kernel) with -O3 for the device's architecture, "
           "followed by the solution's cuda_cflags";
  }

  Calibration calibrate() const override { return calibrate_cuda(ordinal_); }
  std::unique_ptr<Device> make_device(bool trace_activity) const override {
    return make_cuda_device(ordinal_, trace_activity);
  }

  // Matrix products run on the tensor cores of their dtype, and those bound T_SOL; other
  // arithmetic runs on the CUDA cores, whose FMA rate a diagnosis reports but T_SOL ignores.
  std::optional<ComputePeak> compute_peak(
      const Calibration& calibration,
      std::optional<std::string_view> tensor_core_dtype) const override {
    if (tensor_core_dtype) {
      const auto it = calibration.tensor_tflops.find(std::string(*tensor_core_dtype));
      if (it != calibration.tensor_tflops.end() && it->second > 0)
        return ComputePeak{it->second * 1e12, fmt::format("{} tensor cores", *tensor_core_dtype),
                           true};
    }
    if (calibration.fp32_fma_tflops <= 0) return std::nullopt;
    return ComputePeak{calibration.fp32_fma_tflops * 1e12, "fp32 FMA", false};
  }

  bool times_compiled_baseline() const override { return true; }
  // Compiling runs on the host's cores while the GPU measures.
  bool builds_ahead() const override { return true; }

 private:
  int ordinal_;
};

}  // namespace

/// "cuda" (ordinal 0) or "cuda:N".
std::unique_ptr<Backend> make_cuda_backend(std::string_view device) {
  if (device == "cuda") return std::make_unique<CudaBackend>(0);
  if (!device.starts_with("cuda:")) return nullptr;
  const std::string_view ordinal = device.substr(5);
  if (ordinal.empty() || ordinal.size() > 4 ||
      ordinal.find_first_not_of("0123456789") != std::string_view::npos)
    return nullptr;
  return std::make_unique<CudaBackend>(std::stoi(std::string(ordinal)));
}

}  // namespace kernelarc

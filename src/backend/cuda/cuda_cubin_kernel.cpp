#include "backend/cuda/cuda_cubin_kernel.h"

#include <cuda_runtime.h>

#include <fstream>
#include <iterator>
#include <vector>

#include "backend/cuda/cuda_launch.h"
#include "core/error.h"

namespace kernelarc {
namespace {

std::string cuda_message(const char* operation, cudaError_t error) {
  return std::string(operation) + ": " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error);
}

std::string dims(const std::array<int64_t, 3>& d) {
  return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) +
         ")";
}

bool read_file(const std::filesystem::path& path, std::string& content) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  content.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  return static_cast<bool>(file) || file.eof();
}

class LoadedCubinKernel final : public CubinKernel {
 public:
  LoadedCubinKernel(LaunchPlan plan, std::string cubin)
      : resolver_(std::move(plan)), cubin_(std::move(cubin)) {}

  ~LoadedCubinKernel() override {
    if (library_ != nullptr) cudaLibraryUnload(library_);
  }

  /// Loads the cubin; an error message on failure.
  std::optional<std::string> load() {
    if (cudaError_t error =
            cudaLibraryLoadData(&library_, cubin_.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
        error != cudaSuccess) {
      library_ = nullptr;
      cudaGetLastError();
      return cuda_message("cudaLibraryLoadData", error);
    }
    const std::string& symbol = resolver_.plan().symbol;
    if (cudaError_t error = cudaLibraryGetKernel(&kernel_, library_, symbol.c_str());
        error != cudaSuccess) {
      cudaGetLastError();
      return cuda_message(("cudaLibraryGetKernel(" + symbol + ")").c_str(), error);
    }
    if (cudaError_t error = cudaGetDevice(&device_); error != cudaSuccess) {
      return cuda_message("cudaGetDevice", error);
    }
    return std::nullopt;
  }

  int run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs, void* stream,
          void*, std::size_t) override {
    LaunchConfig config;
    if (auto error = resolver_.resolve(inputs, n_inputs, outputs, n_outputs, config)) {
      return failed(*error);
    }
    // The calling convention of cuda_launch.h: input pointers, output pointers, int64 axes.
    pointers_.clear();
    for (int i = 0; i < n_inputs; ++i) pointers_.push_back(inputs[i].data);
    for (int i = 0; i < n_outputs; ++i) pointers_.push_back(outputs[i].data);
    axis_values_.assign(config.axis_values.begin(), config.axis_values.end());
    arguments_.clear();
    for (void*& pointer : pointers_) arguments_.push_back(&pointer);
    for (long long& value : axis_values_) arguments_.push_back(&value);

    if (config.shared_bytes > dynamic_shared_limit_) {
      // Above 48 KiB a kernel must opt in to its dynamic shared memory.
      if (cudaError_t error =
              cudaKernelSetAttributeForDevice(kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(config.shared_bytes), device_);
          error != cudaSuccess) {
        cudaGetLastError();
        return failed(cuda_message("setting the dynamic shared memory limit", error) + " to " +
                      std::to_string(config.shared_bytes) + " bytes");
      }
      dynamic_shared_limit_ = config.shared_bytes;
    }
    cudaLaunchConfig_t launch{};
    launch.gridDim =
        dim3(static_cast<unsigned>(config.grid[0]), static_cast<unsigned>(config.grid[1]),
             static_cast<unsigned>(config.grid[2]));
    launch.blockDim =
        dim3(static_cast<unsigned>(config.block[0]), static_cast<unsigned>(config.block[1]),
             static_cast<unsigned>(config.block[2]));
    launch.dynamicSmemBytes = static_cast<std::size_t>(config.shared_bytes);
    launch.stream = static_cast<cudaStream_t>(stream);
    cudaLaunchAttribute cluster{};
    if (config.cluster) {
      cluster.id = cudaLaunchAttributeClusterDimension;
      cluster.val.clusterDim.x = static_cast<unsigned>((*config.cluster)[0]);
      cluster.val.clusterDim.y = static_cast<unsigned>((*config.cluster)[1]);
      cluster.val.clusterDim.z = static_cast<unsigned>((*config.cluster)[2]);
      launch.attrs = &cluster;
      launch.numAttrs = 1;
    }
    if (cudaError_t error =
            cudaLaunchKernelExC(&launch, reinterpret_cast<const void*>(kernel_), arguments_.data());
        error != cudaSuccess) {
      cudaGetLastError();
      return failed(cuda_message("launching", error) + " (grid " + dims(config.grid) + ", block " +
                    dims(config.block) + ", " + std::to_string(config.shared_bytes) +
                    " bytes of dynamic shared memory)");
    }
    last_error_.clear();
    return 0;
  }

  const char* last_error() const override { return last_error_.c_str(); }

 private:
  int failed(std::string message) {
    last_error_ = resolver_.plan().spec.kernel + ": " + std::move(message);
    return 1;
  }

  LaunchResolver resolver_;
  std::string cubin_;  // kept for the library's lifetime
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
  int device_ = 0;
  int64_t dynamic_shared_limit_ = 48 << 10;
  std::vector<void*> pointers_;
  std::vector<long long> axis_values_;
  std::vector<void*> arguments_;
  std::string last_error_;
};

}  // namespace

std::unique_ptr<CubinKernel> load_cubin_kernel(const std::filesystem::path& plan_file,
                                               std::string& error) {
  std::string text;
  if (!read_file(plan_file, text)) {
    error = "cannot read " + plan_file.string();
    return nullptr;
  }
  LaunchPlan plan;
  try {
    plan = LaunchPlan::from_json(nlohmann::json::parse(text), plan_file.string());
  } catch (const nlohmann::json::exception& parse_error) {
    error = plan_file.string() + ": " + parse_error.what();
    return nullptr;
  } catch (const InputError& input_error) {
    error = input_error.what();
    return nullptr;
  }
  std::string cubin;
  const std::filesystem::path cubin_path = plan_file.parent_path() / plan.cubin_file;
  if (!read_file(cubin_path, cubin)) {
    error = "cannot read " + cubin_path.string();
    return nullptr;
  }
  auto kernel = std::make_unique<LoadedCubinKernel>(std::move(plan), std::move(cubin));
  if (auto load_error = kernel->load()) {
    error = cubin_path.string() + ": " + *load_error;
    return nullptr;
  }
  return kernel;
}

}  // namespace kernelarc

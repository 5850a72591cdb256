// The CUDA-only entry points of cuda_device.h and cuda_cubin_kernel.h for builds without CUDA,
// so that callers link either way and learn at run time that CUDA is unavailable.
#ifndef KERNELARC_WITH_CUDA

#include "backend/cuda/cuda_cubin_kernel.h"
#include "backend/cuda/cuda_device.h"

namespace kernelarc {

int cuda_device_count() {
  return 0;
}

std::unique_ptr<CubinKernel> load_cubin_kernel(const std::filesystem::path& plan_file,
                                               std::string& error) {
  error = plan_file.string() + ": kernelarc was built without CUDA support";
  return nullptr;
}

}  // namespace kernelarc

#endif

// A device-only candidate (an NVRTC cubin plus its launch plan, see cuda_launch.h) behind the
// kernel ABI's ka_run signature, so the worker runs it exactly like a library's entry point.
//
// In the worker, for a path that is_launch_plan() accepts, instead of dlopen + dlsym:
//   std::string error;
//   auto kernel = load_cubin_kernel(plan_path, error);  // nullptr: LoadFailed with `error`
//   int rc = kernel->run(inputs, n_in, outputs, n_out, device.stream(), ws, ws_bytes);
//   if (rc != 0) message = kernel->last_error();
// The kernel is loaded into the current CUDA context, so the CUDA device must exist first.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "kernelarc/abi.h"

namespace kernelarc {

class CubinKernel {
 public:
  virtual ~CubinKernel() = default;

  /// ka_run's contract: binds the axes from the tensors' shapes, evaluates the launch and
  /// launches the kernel on `stream` (asynchronously). Returns 0, or 1 with last_error() set
  /// when the tensors do not fit the plan or the launch is refused. The workspace is unused.
  virtual int run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs,
                  void* stream, void* workspace, std::size_t workspace_bytes) = 0;
  /// Why the last run failed ("" after a success), like a library's ka_last_error.
  virtual const char* last_error() const = 0;
};

/// Loads the plan and its cubin into the current CUDA context. Returns nullptr with `error` set
/// when the plan is malformed, the cubin or its kernel cannot be loaded (an architecture the GPU
/// cannot run, say), or kernelarc was built without CUDA.
std::unique_ptr<CubinKernel> load_cubin_kernel(const std::filesystem::path& plan_file,
                                               std::string& error);

}  // namespace kernelarc

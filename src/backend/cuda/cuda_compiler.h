// Builds a CUDA solution, cached by content, in one of two ways:
//
//  * a solution with host code (no "launch" in its "kernelarc" object) is compiled by nvcc into
//    a shared object exporting the kernel ABI's ka_run, which receives the device's stream;
//  * a device-only solution (a "launch" spec, see cuda_launch.h for the spec and the kernel's
//    calling convention) is compiled in-process by NVRTC into a cubin, and the result is a
//    launch plan (kernel.launch.json beside kernel.cubin) that the worker runs through
//    CubinKernel (cuda_cubin_kernel.h) exactly as it would run a library's ka_run.
//
// Compiling needs the toolkit (nvcc, libnvrtc), never a GPU or a driver. A failing compile is a
// result (ok == false, with the compiler's log), never an exception.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/compile_result.h"
#include "core/problem.h"

namespace kernelarc {

struct CudaCompileOptions {
  /// The nvcc to run; empty: $KERNELARC_NVCC, else the toolkit's nvcc found when kernelarc was
  /// built, else nvcc on $PATH.
  std::string nvcc;
  /// The target GPU's architecture ("sm_90", as CudaDeviceInfo::arch() reports it); empty when
  /// unknown, which selects sm_90a.
  std::string device_arch;
  /// nvcc flags, before the solution's cuda_cflags. Unless those name an architecture (-arch,
  /// -gencode, --gpu-architecture), -gencode for the selected architecture is added.
  std::vector<std::string> nvcc_flags = {"-O3", "-std=c++17"};
  /// NVRTC options, before the solution's cuda_cflags; the architecture and the toolkit's
  /// include directories are added.
  std::vector<std::string> nvrtc_flags = {"-std=c++17"};
  /// nvcc is killed after this long; so is the sandboxed NVRTC child of a synthesized kernel
  /// (NVRTC for trusted code runs in-process and has no timeout).
  std::chrono::seconds timeout{300};
  /// Builds by hash of sources, flags, launch plan, compiler version and architecture, under
  /// <cache_dir>/cuda/<hash>/. Required.
  std::filesystem::path cache_dir;
};

/// True when the solution is device-only (its "kernelarc" object has "launch"): NVRTC builds it.
bool is_device_only_solution(const Solution& solution);

/// The architecture a solution is built for: the solution's "kernelarc"."arch" when given
/// ("sm_90a"); otherwise `device_arch` with the arch-specific suffix "a" added when a source
/// uses wgmma, setmaxnreg or tcgen05 instructions; sm_90a when `device_arch` is empty.
std::string select_cuda_arch(const Solution& solution, const std::string& device_arch);

/// Compiles `solution` for the problem `definition` (whose axes and tensors a launch plan
/// needs). `library` is the shared object, or the launch plan of a device-only solution (then
/// is_launch_plan(library) holds). Throws InternalError only when the cache cannot be written.
CompileResult compile_cuda_solution(const Solution& solution, const Definition& definition,
                                    const CudaCompileOptions& options);

}  // namespace kernelarc

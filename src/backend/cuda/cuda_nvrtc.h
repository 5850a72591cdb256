// Device-only CUDA code compiled in-process with NVRTC to a cubin (milliseconds, no nvcc, no GPU).
//
// libnvrtc is loaded with dlopen on first use (see cuda_dynlib.h); when it cannot be loaded every
// compile fails with the loader's reason in the log. NVRTC runs inside the calling process and so
// has no timeout; what it compiles is a single kernel, not a host program.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kernelarc {

/// A file NVRTC can #include, by the name used in the #include directive.
struct NvrtcHeader {
  std::string name;
  std::string content;
};

struct NvrtcRequest {
  std::string source_name;  ///< shown in diagnostics ("kernel.cu")
  std::string source;
  std::vector<NvrtcHeader> headers;
  /// NVRTC options ("--gpu-architecture=sm_90a", "-std=c++17", "-DBLOCK=256", "-I...").
  std::vector<std::string> options;
  /// The kernel to look up, as written in the source ("rmsnorm" or "gemm<128, 64>"); its
  /// lowered (mangled) name is returned so the cubin's symbol can be found.
  std::string kernel;
};

struct NvrtcResult {
  bool ok = false;
  std::string log;           ///< NVRTC's log (warnings too), or why it could not run
  std::string cubin;         ///< the cubin's bytes when ok
  std::string lowered_name;  ///< the kernel's symbol in the cubin when ok
};

NvrtcResult nvrtc_compile(const NvrtcRequest& request);

/// "nvrtc 13.0", or "nvrtc unavailable: <reason>" when the library cannot be loaded.
std::string nvrtc_version();

/// The toolkit's include directories that kernels compiled by NVRTC may need (cuda_fp16.h,
/// cuda_bf16.h, <cuda/std/...>, cute): those found when kernelarc was built, else those beside
/// the loaded libnvrtc. Empty when neither is known.
std::vector<std::filesystem::path> nvrtc_include_dirs();

}  // namespace kernelarc

// The generated host launcher of a device-only kernel (a solution with kernelarc.launch) for one
// variant: a .cu file that compiles the kernel with the variant's knobs as macros, as kernelarc's
// NVRTC build does, and launches it as kernelarc's backend does (backend/cuda/cuda_launch.h:
// input pointers, output pointers, one long long per axis; grid, block, dynamic shared memory
// and cluster from the launch expressions). It includes no PyTorch header, so nvcc alone can
// check it; main.cpp calls it with the pointers, the axes and the stream.
#pragma once

#include <string>

#include "app/export_entry_source.h"
#include "backend/cuda/cuda_launch.h"

namespace kernelarc {

struct LauncherPlan {
  const Definition* definition = nullptr;
  std::string solution_name;
  LaunchSpec spec;
  std::string kernel_include;  ///< the kernel's source in the exported solution ("kernel.cu.inc")
};

/// The identifier that names the kernel in `kernel` ("rmsnorm" of "ns::rmsnorm<256>"): each
/// variant renames it with a macro, so that the variants' kernels and host stubs are distinct.
std::string kernel_identifier(const std::string& kernel);

/// The launcher .cu of `variant`. Throws InputError naming kernelarc.launch for an expression
/// that names neither an axis nor a knob.
std::string generate_launcher_source(const LauncherPlan& plan, const ExportVariant& variant);

/// Macros PyTorch's extension build passes to nvcc, which hide the half and bfloat16 operators
/// that kernels written for NVRTC use: every exported CUDA translation unit undefines them.
extern const char* const kUndefineTorchHalfMacros;

}  // namespace kernelarc

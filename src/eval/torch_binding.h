// Solutions written as PyTorch extensions (`spec.binding: "torch"`, the form of SOL-ExecBench's
// and FlashInfer-Bench's C++/CUDA solutions) run through the same guard as kernelarc's own: the
// extension is built by torch.utils.cpp_extension with the Python that has torch, and a small C
// library beside it (python/kernelarc_torch_shim.c) gives it kernelarc's ABI. In the worker that
// library starts the interpreter on the first call and passes the guard's buffers over DLPack,
// so the worker's sandbox, timing and checks apply unchanged.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "backend/compile_result.h"
#include "core/problem.h"

namespace kernelarc {

/// Whether `solution` is a PyTorch extension rather than kernelarc's ABI: `binding: torch`, or
/// no binding, an entry point other than ka_run and a source that defines a pybind11 module
/// (SOL-ExecBench makes torch the default binding of C++ languages).
bool uses_torch_binding(const Solution& solution);

/// Whether `solution` is plain PyTorch code (languages `pytorch` or `python`, a .py entry point):
/// SOL-ExecBench's Python solutions, hosted in the worker the same way, without a build. Triton
/// and the other JIT languages are not: their compilers run programs, which the worker's sandbox
/// forbids.
bool is_pytorch_solution(const Solution& solution);

struct TorchBindingOptions {
  std::filesystem::path cache_dir;  ///< the workspace's build cache
  std::string python;               ///< the interpreter; empty = the oracle's detection
  bool cuda = false;                ///< built with CUDA (a cuda:N device) or for the CPU
  std::chrono::seconds timeout{900};
};

/// Builds the extension (none for a PyTorch solution) and its ABI library; the result's library
/// exports ka_run. A failure (no Python with torch, a compile error, a synthesized solution) is a
/// result, not a throw.
CompileResult build_torch_binding(const Solution& solution, const Definition& definition,
                                  const TorchBindingOptions& options);

}  // namespace kernelarc

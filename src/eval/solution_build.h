// Turns a solution into something the worker can load, by language and device.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/problem.h"
#include "eval/guard.h"

namespace kernelarc {

struct BuildResult {
  bool ok = false;
  std::filesystem::path library;
  std::string symbol;  ///< the entry point to resolve
  std::string log;     ///< the compiler's complaint when !ok
  bool cached = false;
  double seconds = 0;
  std::string cache_key;
  std::string compiler;            ///< what built it, with flags, for the trace
  std::vector<std::string> notes;  ///< the compiler's remarks on slow code (CompileResult)
};

/// Compiles with the backend that serves the solution's language on the guard's device.
/// InputError when no backend does (e.g. a "cuda_cpp" solution on the "cpu" device).
/// `device_arch` is the target GPU's ("sm_90"), empty for the CPU or when unknown.
BuildResult build_solution(const Solution& solution, const Definition& definition,
                           const GuardOptions& options, const std::string& device_arch);

}  // namespace kernelarc

// Builds a CPU solution into a shared object with the host compiler, cached by content.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/compile_result.h"
#include "core/problem.h"

namespace kernelarc {

/// $CXX when set (it may carry a launcher, as in "ccache g++"), else "c++".
std::string default_cpu_compiler();

struct CpuCompileOptions {
  /// The compiler command; split at spaces, its first word looked up on $PATH.
  std::string compiler = default_cpu_compiler();
  /// Replaced (not extended) by --cflags; the solution's own cflags are appended.
  std::vector<std::string> flags = {"-O3", "-march=native", "-fopenmp"};
  std::chrono::seconds timeout{120};
  std::filesystem::path cache_dir;  ///< binaries by hash of sources + flags + compiler version
};

/// Compiles every .cpp/.cc/.cxx (as C++20) and .c (as C11) source of the solution into
/// <cache_dir>/cpu/<key>/lib.so, the key hashing the sources, flags, compiler and its version and
/// the host CPU. A cache hit returns at once (cached). A compile error or timeout is ok=false
/// with the head of the compiler's output; a source path escaping the solution is InputError.
/// Safe to call concurrently, from threads or processes, for the same or different solutions.
CompileResult compile_cpu_solution(const Solution& solution, const CpuCompileOptions& options);

}  // namespace kernelarc

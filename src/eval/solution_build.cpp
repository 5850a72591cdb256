#include "eval/solution_build.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/cpu_compiler.h"
#include "backend/cuda_compiler.h"
#include "core/error.h"

namespace kernelarc {

namespace {

bool has_language(const Solution& solution, std::initializer_list<std::string_view> names) {
  return std::any_of(solution.languages.begin(), solution.languages.end(), [&](const auto& lang) {
    return std::find(names.begin(), names.end(), lang) != names.end();
  });
}

BuildResult from_compile(const CompileResult& compiled, const Solution& solution,
                         std::string compiler) {
  return BuildResult{.ok = compiled.ok,
                     .library = compiled.library,
                     .symbol = solution.entry_symbol,
                     .log = compiled.log,
                     .cached = compiled.cached,
                     .seconds = compiled.seconds,
                     .cache_key = compiled.cache_key,
                     .compiler = std::move(compiler)};
}

}  // namespace

BuildResult build_solution(const Solution& solution, const Definition& definition,
                           const GuardOptions& options, const std::string& device_arch) {
  const bool cpu_device = options.device == "cpu";
  if (cpu_device && has_language(solution, {"cpp", "c", "cpu"})) {
    CpuCompileOptions compile = options.cpu_compile;
    compile.cache_dir = options.workspace / "build";
    return from_compile(compile_cpu_solution(solution, compile), solution,
                        fmt::format("{} {}", compile.compiler, fmt::join(compile.flags, " ")));
  }
  if (!cpu_device && has_language(solution, {"cuda_cpp", "cuda", "cublas", "cutlass"})) {
    CudaCompileOptions compile;
    compile.cache_dir = options.workspace / "build";
    compile.device_arch = device_arch;
    const auto arch = select_cuda_arch(solution, compile.device_arch);
    const bool nvrtc = is_device_only_solution(solution);
    return from_compile(compile_cuda_solution(solution, definition, compile), solution,
                        (nvrtc ? "nvrtc " : "nvcc ") + arch);
  }
  throw_input_error(solution.path.string(), "spec.languages",
                    fmt::format("no backend runs [{}] on device '{}' (the CPU runs \"cpp\", "
                                "CUDA devices run \"cuda_cpp\")",
                                fmt::join(solution.languages, ", "), options.device));
}

}  // namespace kernelarc

#include "eval/solution_build.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/backend.h"
#include "core/error.h"
#include "eval/torch_binding.h"

namespace kernelarc {

namespace {

bool builds_any(const Backend& backend, const Solution& solution) {
  return std::any_of(
      solution.languages.begin(), solution.languages.end(),
      [&](const std::string& language) { return backend.builds_language(language); });
}

}  // namespace

BuildResult build_solution(const Solution& solution, const Definition& definition,
                           const GuardOptions& options, const std::string& device_arch) {
  const Backend& backend = backend_for(options.device);
  const bool cuda = backend.kind() == DeviceKind::Cuda;
  // SOL-ExecBench names only GPU languages; an extension without CUDA sources runs on the CPU
  // whatever its language says (the build refuses .cu sources there).
  if (is_pytorch_solution(solution) ||
      (uses_torch_binding(solution) && (!cuda || builds_any(backend, solution)))) {
    const CompileResult built = build_torch_binding(
        solution, definition,
        {.cache_dir = options.workspace / "build", .python = options.python, .cuda = cuda});
    return BuildResult{.ok = built.ok,
                       .library = built.library,
                       .symbol = "ka_run",
                       .log = built.log,
                       .cached = built.cached,
                       .seconds = built.seconds,
                       .cache_key = built.cache_key,
                       .compiler = is_pytorch_solution(solution)
                                       ? "python (PyTorch solution, hosted in the worker)"
                                       : "torch.utils.cpp_extension (binding: torch)"};
  }
  if (builds_any(backend, solution)) {
    const BackendBuild built = backend.compile(solution, definition,
                                               {.cache_dir = options.workspace / "build",
                                                .host = options.cpu_compile,
                                                .device_arch = device_arch});
    const CompileResult& compiled = built.result;
    return BuildResult{.ok = compiled.ok,
                       .library = compiled.library,
                       .symbol = solution.entry_symbol,
                       .log = compiled.log,
                       .cached = compiled.cached,
                       .seconds = compiled.seconds,
                       .cache_key = compiled.cache_key,
                       .compiler = built.compiler,
                       .notes = compiled.notes};
  }
  throw_input_error(
      solution.path.string(), "spec.languages",
      fmt::format("no backend runs [{}] on device '{}' ({})", fmt::join(solution.languages, ", "),
                  options.device, backend.languages_text()));
}

}  // namespace kernelarc

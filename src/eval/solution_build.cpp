#include "eval/solution_build.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/cpu_compiler.h"
#include "core/error.h"

namespace kernelarc {

namespace {

bool has_language(const Solution& solution, std::initializer_list<std::string_view> names) {
  return std::any_of(solution.languages.begin(), solution.languages.end(), [&](const auto& lang) {
    return std::find(names.begin(), names.end(), lang) != names.end();
  });
}

}  // namespace

BuildResult build_solution(const Solution& solution, const GuardOptions& options) {
  const bool cpu_device = options.device == "cpu";
  if (cpu_device && has_language(solution, {"cpp", "c", "cpu"})) {
    CpuCompileOptions compile = options.cpu_compile;
    compile.cache_dir = options.workspace / "build";
    const auto compiled = compile_cpu_solution(solution, compile);
    return BuildResult{.ok = compiled.ok,
                       .library = compiled.library,
                       .symbol = solution.entry_symbol,
                       .log = compiled.log,
                       .cached = compiled.cached,
                       .seconds = compiled.seconds,
                       .cache_key = compiled.cache_key,
                       .compiler = fmt::format("{} {}", compile.compiler,
                                               fmt::join(compile.flags, " "))};
  }
  throw_input_error(solution.path.string(), "spec.languages",
                    fmt::format("no backend runs [{}] on device '{}' (the CPU runs \"cpp\")",
                                fmt::join(solution.languages, ", "), options.device));
}

}  // namespace kernelarc

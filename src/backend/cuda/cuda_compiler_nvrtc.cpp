// The NVRTC path of compile_cuda_solution: a device-only solution to a cubin and a launch plan.
#include "backend/build_input_policy.h"
#include "backend/compile_sandbox.h"
#include "backend/cuda/cuda_build.h"
#include "backend/cuda/cuda_launch.h"
#include "backend/cuda/cuda_nvrtc.h"
#include "core/hash.h"

namespace kernelarc {
namespace {

// Bumped when the build recipe changes, so old cache entries are not reused.
constexpr std::string_view kNvrtcRecipeVersion = "kernelarc-cuda-nvrtc-1";
constexpr const char* kCubinName = "kernel.cubin";

}  // namespace

CompileResult compile_device_only_solution(const Solution& solution, const Definition& definition,
                                           const CudaCompileOptions& options,
                                           const std::string& arch) {
  CompileResult result;
  LaunchSpec spec;
  std::map<std::string, int64_t> knobs;
  LaunchPlan plan;
  if (auto error = parse_launch_spec(solution.ext, solution.entry_symbol, spec, knobs)) {
    result.log = *error;
    return result;
  }
  if (auto error = make_launch_plan(spec, knobs, definition, plan)) {
    result.log = *error;
    return result;
  }
  NvrtcRequest request;
  request.kernel = spec.kernel;
  bool found_entry = false;
  for (const SourceFile& source : solution.sources) {
    if (source.path == solution.entry_file) {
      request.source_name = source.path;
      request.source = source.content;
      found_entry = true;
    } else {
      request.headers.push_back({source.path, source.content});
    }
  }
  if (!found_entry) {
    result.log = "the entry point's file \"" + solution.entry_file + "\" is not among the sources";
    return result;
  }
  request.options.push_back("--gpu-architecture=" + arch);
  request.options.insert(request.options.end(), options.nvrtc_flags.begin(),
                         options.nvrtc_flags.end());
  for (const auto& dir : nvrtc_include_dirs()) request.options.push_back("-I" + dir.string());
  for (const std::string& define : knob_defines(knobs)) request.options.push_back(define);
  request.options.insert(request.options.end(), solution.cuda_cflags.begin(),
                         solution.cuda_cflags.end());
  if (uses_wgmma(solution)) request.options.push_back("-Xptxas=-v");

  ContentHasher hasher;
  hasher.add(kNvrtcRecipeVersion).add(nvrtc_version()).add(plan.to_json().dump());
  hasher.add(request.kernel).add(request.source_name).add(request.source);
  for (const NvrtcHeader& header : request.headers) hasher.add(header.name).add(header.content);
  for (const std::string& option : request.options) hasher.add(option);
  result.cache_key = hasher.hex();
  if (auto plan_file =
          CudaBuild::cached(options.cache_dir, result.cache_key, kLaunchPlanFileName)) {
    result.ok = result.cached = true;
    result.library = *plan_file;
    result.notes = cached_compile_notes(*plan_file);
    return result;
  }

  // Synthesized code may #include any path, and NVRTC reads includes from the filesystem.
  NvrtcResult compiled = is_synthesized_solution(solution)
                             ? nvrtc_compile_in_sandbox(request, options.timeout)
                             : nvrtc_compile(request);
  result.log = trim_build_log(compiled.log);
  if (!compiled.ok) return result;
  result.notes = wgmma_compile_notes(compiled.log);
  CudaBuild build(options.cache_dir, result.cache_key);
  plan.cubin_file = kCubinName;
  plan.symbol = compiled.lowered_name;
  write_build_file(build.work_dir() / kCubinName, compiled.cubin);
  write_build_file(build.work_dir() / "build.log", compiled.log);
  write_build_file(build.work_dir() / kLaunchPlanFileName, plan.to_json().dump(2));
  result.library = build.commit(kLaunchPlanFileName);
  result.ok = true;
  return result;
}

}  // namespace kernelarc

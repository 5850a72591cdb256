#include "backend/cuda/cuda_compiler.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <regex>

#include "backend/build_input_policy.h"
#include "backend/compile_sandbox.h"
#include "backend/cuda/cuda_build.h"
#include "backend/cuda/cuda_launch.h"
#include "backend/process.h"
#include "core/elapsed.h"
#include "core/hash.h"
#include "core/paths.h"

namespace kernelarc {
namespace {

using Clock = std::chrono::steady_clock;

// Bumped when the build recipe changes, so old cache entries are not reused.
constexpr std::string_view kNvccRecipeVersion = "kernelarc-cuda-nvcc-1";
constexpr const char* kLibraryName = "lib.so";

#ifdef KERNELARC_NVCC
constexpr const char* kNvccAtBuild = KERNELARC_NVCC;
#else
constexpr const char* kNvccAtBuild = "";
#endif

std::optional<std::string> find_nvcc(const CudaCompileOptions& options) {
  if (!options.nvcc.empty()) return find_executable(options.nvcc);
  if (const char* env = std::getenv("KERNELARC_NVCC"); env != nullptr && *env != '\0') {
    return find_executable(env);
  }
  std::error_code error;
  if (*kNvccAtBuild != '\0' && std::filesystem::exists(kNvccAtBuild, error)) return kNvccAtBuild;
  if (auto on_path = find_executable("nvcc")) return on_path;
  if (std::filesystem::exists("/usr/local/cuda/bin/nvcc", error)) return "/usr/local/cuda/bin/nvcc";
  return std::nullopt;
}

/// `nvcc --version`, run once per nvcc per process.
std::string nvcc_version(const std::string& nvcc) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard lock(mutex);
  auto found = versions.find(nvcc);
  if (found != versions.end()) return found->second;
  return versions[nvcc] = run_command({nvcc, "--version"}, std::chrono::seconds(30)).output;
}

bool is_arch(const std::string& arch) {
  static const std::regex pattern("sm_[0-9]+[af]?");
  return std::regex_match(arch, pattern);
}

// Instructions that exist only on the arch-specific target (sm_90a, sm_100a), not on sm_XX.
bool uses_arch_specific_instructions(const Solution& solution) {
  for (const SourceFile& source : solution.sources) {
    for (const char* word : {"wgmma", "setmaxnreg", "tcgen05"}) {
      if (source.content.find(word) != std::string::npos) return true;
    }
  }
  return false;
}

bool names_architecture(const std::vector<std::string>& flags) {
  for (const std::string& flag : flags) {
    for (const char* prefix :
         {"-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code"}) {
      if (flag.rfind(prefix, 0) == 0) return true;
    }
  }
  return false;
}

bool is_compiled_source(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  return extension == ".cu" || extension == ".cpp" || extension == ".cc" || extension == ".cxx";
}

std::string read_abi_header() {
  std::ifstream file(abi_include_dir() / "kernelarc" / "abi.h");
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line = "$";
  for (const std::string& arg : argv) line += " " + arg;
  return line + "\n";
}

CompileResult compile_with_nvcc(const Solution& solution, const CudaCompileOptions& options,
                                const std::string& arch) {
  CompileResult result;
  const std::optional<std::string> nvcc = find_nvcc(options);
  if (!nvcc) {
    result.log = "nvcc not found (set KERNELARC_NVCC or put the CUDA toolkit's bin on PATH)";
    return result;
  }
  std::map<std::string, int64_t> knobs;
  if (auto error = parse_knobs(solution.ext, knobs)) {
    result.log = *error;
    return result;
  }
  // -fno-gnu-unique: GCC exports a template's function-local static (a kernel's "shared memory
  // opted in" flag) as a GNU unique symbol, which the loader unifies across every library of
  // the process despite RTLD_LOCAL. A worker that had loaded one candidate then skipped the next
  // candidate's opt-in for its own kernel and launched it with "invalid argument" (seen on the
  // H100: scaled_gemm_mma after scaled_gemm_cublaslt's fallback to the same kernel). nvcc's host
  // compiler on Linux is GCC.
  std::vector<std::string> argv = {*nvcc,   "-shared",    "-Xcompiler",
                                   "-fPIC", "-Xcompiler", "-fno-gnu-unique"};
  argv.insert(argv.end(), options.nvcc_flags.begin(), options.nvcc_flags.end());
  if (!names_architecture(options.nvcc_flags) && !names_architecture(solution.cuda_cflags)) {
    const std::string number = arch.substr(3);  // "90a" of "sm_90a"
    argv.push_back("-gencode=arch=compute_" + number + ",code=sm_" + number);
  }
  for (const std::string& define : knob_defines(knobs)) argv.push_back(define);
  argv.insert(argv.end(), solution.cuda_cflags.begin(), solution.cuda_cflags.end());
  if (uses_wgmma(solution)) argv.push_back("-Xptxas=-v");
  argv.push_back("-I" + abi_include_dir().string());
  argv.push_back("-Isrc");
  bool compilable = false;
  for (const SourceFile& source : solution.sources) {
    if (!is_compiled_source(source.path)) continue;
    argv.push_back("src/" + source.path);
    compilable = true;
  }
  if (!compilable) {
    result.log = "the solution has no .cu, .cpp, .cc or .cxx source to compile";
    return result;
  }
  argv.insert(argv.end(), {"-o", kLibraryName});
  argv.insert(argv.end(), solution.ld_flags.begin(), solution.ld_flags.end());

  ContentHasher hasher;
  hasher.add(kNvccRecipeVersion).add(nvcc_version(*nvcc)).add(read_abi_header());
  for (const std::string& arg : argv) hasher.add(arg);
  for (const SourceFile& source : solution.sources) hasher.add(source.path).add(source.content);
  result.cache_key = hasher.hex();

  if (auto library = CudaBuild::cached(options.cache_dir, result.cache_key, kLibraryName)) {
    result.ok = result.cached = true;
    result.library = *library;
    result.notes = cached_compile_notes(*library);
    return result;
  }
  CudaBuild build(options.cache_dir, result.cache_key);
  for (const SourceFile& source : solution.sources) {
    write_build_file(build.work_dir() / "src" / source.path, source.content);
  }
  // Synthesized code may #include any path: nvcc reads only the toolchain and the build.
  std::optional<std::vector<std::string>> environment;
  std::optional<SandboxOptions> sandbox;
  if (is_synthesized_solution(solution)) {
    environment = compile_environment(build.work_dir());
    sandbox = compile_sandbox(build.work_dir(), {*nvcc});
  }
  CommandResult run = run_command(argv, options.timeout, build.work_dir(), environment, sandbox);
  const std::string output = command_line(argv) + run.output;
  if (run.timed_out) {
    result.log = "nvcc did not finish within " + std::to_string(options.timeout.count()) +
                 " s and was killed\n" + trim_build_log(output);
    return result;
  }
  if (run.status.signaled || run.status.exit_code != 0) {
    result.log = trim_build_log(output) + "(nvcc " + describe_exit(run.status) + ")\n";
    return result;
  }
  write_build_file(build.work_dir() / "build.log", output);
  result.library = build.commit(kLibraryName);
  result.ok = true;
  result.log = trim_build_log(output);
  result.notes = wgmma_compile_notes(output);
  return result;
}

}  // namespace

bool is_device_only_solution(const Solution& solution) {
  return solution.ext.is_object() && solution.ext.contains("launch");
}

std::string select_cuda_arch(const Solution& solution, const std::string& device_arch) {
  if (auto arch = solution.ext.find("arch"); arch != solution.ext.end()) {
    return arch->is_string() ? arch->get<std::string>() : arch->dump();  // checked by the caller
  }
  if (device_arch.empty()) return "sm_90a";
  const bool has_suffix = device_arch.ends_with('a') || device_arch.ends_with('f');
  if (!has_suffix && uses_arch_specific_instructions(solution)) return device_arch + "a";
  return device_arch;
}

CompileResult compile_cuda_solution(const Solution& solution, const Definition& definition,
                                    const CudaCompileOptions& options) {
  const auto start = Clock::now();
  CompileResult result;
  const std::string arch = select_cuda_arch(solution, options.device_arch);
  const std::optional<std::string> refused =
      is_synthesized_solution(solution) ? refuse_build_inputs(solution) : std::nullopt;
  if (refused) {
    // A stored synthesized solution is checked again: it may predate the allowlist.
    result.log = "refused to build a synthesized solution: " + *refused;
  } else if (auto error = check_source_paths(solution)) {
    result.log = *error;
  } else if (!is_arch(arch)) {
    result.log = "architecture \"" + arch + "\": expected sm_<number> with an optional a or f";
  } else if (is_device_only_solution(solution)) {
    result = compile_device_only_solution(solution, definition, options, arch);
  } else {
    result = compile_with_nvcc(solution, options, arch);
  }
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace kernelarc

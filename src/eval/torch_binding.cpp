#include "eval/torch_binding.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/build_input_policy.h"
#include "backend/cuda/cuda_build.h"
#include "backend/process.h"
#include "core/dtype.h"
#include "core/elapsed.h"
#include "core/hash.h"
#include "core/json_fields.h"
#include "core/paths.h"
#include "oracle/python_bridge.h"

namespace kernelarc {
namespace {

using Json = nlohmann::json;

// Bumped when the build recipe changes, so old cache entries are not reused.
constexpr std::string_view kRecipeVersion = "kernelarc-torch-binding-1";
constexpr const char* kModule = "ka_torch_ext";
constexpr const char* kLibrary = "lib.so";
constexpr std::chrono::seconds kDescribeTimeout{120};

std::filesystem::path script(const char* name) {
  return data_dir() / "python" / name;
}

bool is_compiled_source(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  return extension == ".cu" || extension == ".cpp" || extension == ".cc" || extension == ".cxx" ||
         extension == ".c";
}

/// What kernelarc_torch_build.py says of an interpreter: where its headers and libpython are,
/// and its torch. Asked once per interpreter per process.
struct TorchPython {
  Json facts;
  std::string executable() const { return facts.value("executable", ""); }
};

std::optional<TorchPython> describe(const std::string& interpreter, std::string& why) {
  static std::mutex mutex;
  static std::map<std::string, Json> known;
  std::lock_guard lock(mutex);
  if (auto found = known.find(interpreter); found != known.end()) return TorchPython{found->second};
  const CommandResult run = run_command(
      {interpreter, script("kernelarc_torch_build.py").string(), "describe"}, kDescribeTimeout);
  if (run.timed_out || run.status.signaled || run.status.exit_code != 0) {
    why += fmt::format("{}: {}\n", interpreter, trim_build_log(run.output, 6));
    return std::nullopt;
  }
  const std::size_t line = run.output.rfind('{');
  Json facts = Json::parse(line == std::string::npos ? "" : run.output.substr(line), nullptr,
                           /*allow_exceptions=*/false);
  if (!facts.is_object() || facts.value("libpython", "").empty()) {
    why += fmt::format("{}: no shared libpython to host the extension in the worker ({})\n",
                       interpreter, run.output);
    return std::nullopt;
  }
  known[interpreter] = facts;
  return TorchPython{facts};
}

std::optional<TorchPython> find_torch_python(const std::string& configured, std::string& why) {
  std::string origin;
  for (const std::string& candidate : python_candidates(configured, origin))
    if (auto found = describe(candidate, why)) return found;
  why =
      fmt::format("no Python with torch builds `binding: torch` solutions ({}):\n{}", origin, why);
  return std::nullopt;
}

/// How the host calls the entry: the definition's order, dtypes and scalars.
Json call_description(const Solution& solution, const Definition& definition, bool cuda) {
  Json inputs = Json::array();
  for (const TensorSpec& spec : definition.inputs)
    inputs.push_back({{"name", spec.name},
                      {"dtype", std::string(dtype_name(spec.dtype))},
                      {"scalar", spec.is_scalar()}});
  Json outputs = Json::array();
  for (const TensorSpec& spec : definition.outputs)
    outputs.push_back({{"name", spec.name}, {"dtype", std::string(dtype_name(spec.dtype))}});
  return {{"destination_passing_style", solution.destination_passing_style},
          {"cuda", cuda},
          {"inputs", inputs},
          {"outputs", outputs}};
}

std::string c_string(const std::string& text) {
  return Json(text).dump(-1, ' ', /*ensure_ascii=*/false);
}

/// What the worker's host loads: the extension the build makes, or a Python solution's entry
/// file as it is (relative to the build directory).
struct HostedModule {
  std::string name;
  std::string file;
};

std::string shim_config(const TorchPython& python, const Solution& solution,
                        const HostedModule& module, const Json& description) {
  return fmt::format(
      "#define KA_PYTHON_EXECUTABLE {}\n#define KA_LIBPYTHON {}\n"
      "#define KA_MODULE {}\n#define KA_EXTENSION_FILE {}\n#define KA_ENTRY {}\n"
      "#define KA_CALL_DESCRIPTION {}\n",
      c_string(python.executable()), c_string(python.facts.value("libpython", "")),
      c_string(module.name), c_string(module.file), c_string(solution.entry_symbol),
      c_string(description.dump()));
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line = "$";
  for (const std::string& arg : argv) line += " " + arg;
  return line + "\n";
}

/// Runs one build step in `directory`; appends its output to `log`. False when it failed.
bool run_step(const std::vector<std::string>& argv, const std::filesystem::path& directory,
              std::chrono::seconds timeout, std::string& log) {
  const CommandResult run = run_command(argv, timeout, directory);
  log += command_line(argv) + run.output;
  if (run.timed_out) {
    log += fmt::format("(killed after {} s)\n", timeout.count());
    return false;
  }
  if (run.status.signaled || run.status.exit_code != 0) {
    log += "(" + describe_exit(run.status) + ")\n";
    return false;
  }
  return true;
}

// SOL-ExecBench's defaults when a solution gives no compile options.
std::vector<std::string> or_default(const std::vector<std::string>& given,
                                    std::vector<std::string> fallback) {
  return given.empty() ? fallback : given;
}

/// The extension of `solution` built by torch.utils.cpp_extension, from the build cache when an
/// earlier build made it: <cache>/torch/ext-<key>/src/ka_torch_ext.so. nullopt with `log` on
/// a failed build.
std::optional<std::filesystem::path> build_extension(const Solution& solution,
                                                     const std::vector<std::string>& sources,
                                                     const TorchPython& python,
                                                     const TorchBindingOptions& options,
                                                     std::string& log) {
  const std::string library = std::string(kModule) + ".so";
  const Json job = {
      {"module", kModule},
      {"library", library},
      {"sources", sources},
      {"cflags", solution.cflags},
      {"cuda_cflags", or_default(solution.cuda_cflags, {"-O3", "--use_fast_math"})},
      {"ldflags", or_default(solution.ld_flags, options.cuda ? std::vector<std::string>{"-lcuda"}
                                                             : std::vector<std::string>{})},
      {"cuda", options.cuda}};
  ContentHasher hasher;
  hasher.add(kRecipeVersion).add(python.facts.dump()).add(job.dump());
  hasher.add(read_text_file(script("kernelarc_torch_build.py")));
  for (const SourceFile& source : solution.sources) hasher.add(source.path).add(source.content);
  const std::string key = "ext-" + hasher.hex();
  const std::string artifact = "src/" + library;
  if (auto built = CudaBuild::cached(options.cache_dir, key, artifact, "torch")) return built;

  CudaBuild build(options.cache_dir, key, "torch");
  const std::filesystem::path source_dir = std::filesystem::absolute(build.work_dir() / "src");
  for (const SourceFile& source : solution.sources)
    write_build_file(source_dir / source.path, source.content);
  Json located = job;
  located["directory"] = source_dir.string();
  write_build_file(build.work_dir() / "job.json", located.dump(2));
  if (!run_step(
          {python.executable(), script("kernelarc_torch_build.py").string(), "build", "job.json"},
          build.work_dir(), options.timeout, log))
    return std::nullopt;
  write_build_file(build.work_dir() / "build.log", log);
  return build.commit(artifact);
}

/// `from` at `to`: a hard link where the file system allows one, else a copy.
void place_file(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::error_code error;
  std::filesystem::create_directories(to.parent_path(), error);
  std::filesystem::create_hard_link(from, to, error);
  if (error)
    std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

}  // namespace

bool is_pytorch_solution(const Solution& solution) {
  if (!solution.entry_file.ends_with(".py")) return false;
  return std::all_of(
      solution.languages.begin(), solution.languages.end(),
      [](const std::string& language) { return language == "pytorch" || language == "python"; });
}

bool uses_torch_binding(const Solution& solution) {
  if (solution.binding == "torch") return true;
  if (!solution.binding.empty() || solution.entry_symbol == "ka_run") return false;
  for (const SourceFile& source : solution.sources)
    if (source.content.find("PYBIND11_MODULE") != std::string::npos) return true;
  return false;
}

CompileResult build_torch_binding(const Solution& solution, const Definition& definition,
                                  const TorchBindingOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CompileResult result;
  auto failed = [&](std::string log) {
    result.log = std::move(log);
    result.seconds = seconds_since(start);
    return result;
  };
  // The build runs the solution's own build through Python, outside any sandbox.
  if (is_synthesized_solution(solution))
    return failed(
        "refused to build a synthesized solution with `binding: torch`: generated "
        "code must use kernelarc's ABI (ka_run)");
  if (auto error = check_source_paths(solution)) return failed(*error);
  const bool python_source = is_pytorch_solution(solution);
  std::vector<std::string> sources;
  for (const SourceFile& source : solution.sources) {
    if (python_source || !is_compiled_source(source.path)) continue;
    if (!options.cuda && source.path.ends_with(".cu"))
      return failed(
          fmt::format("source {} is CUDA: a `binding: torch` solution with .cu sources "
                      "runs on a cuda device only",
                      source.path));
    sources.push_back(source.path);
  }
  if (!python_source && sources.empty())
    return failed("the solution has no .cu, .cpp, .cc, .cxx or .c source");

  std::string why;
  const std::optional<TorchPython> python = find_torch_python(options.python, why);
  if (!python) return failed(why);
  std::string log;
  std::optional<std::filesystem::path> extension;
  if (!python_source) {
    extension = build_extension(solution, sources, *python, options, log);
    if (!extension) return failed(trim_build_log(log));
  }
  const HostedModule module = python_source
                                  ? HostedModule{"ka_solution", "src/" + solution.entry_file}
                                  : HostedModule{kModule, std::string(kModule) + ".so"};
  const std::string config =
      shim_config(*python, solution, module, call_description(solution, definition, options.cuda));

  // The ABI library is keyed apart from the extension: solutions that differ only in their
  // entry point or calling style share one extension build (the long step).
  ContentHasher hasher;
  hasher.add(kRecipeVersion).add(config).add(python->facts.dump());
  for (const char* name : {"kernelarc_torch_host.py", "kernelarc_torch_shim.c"})
    hasher.add(read_text_file(script(name)));
  hasher.add(read_text_file(abi_include_dir() / "kernelarc" / "abi.h"));
  if (extension) hasher.add(extension->parent_path().parent_path().filename().string());
  if (python_source)
    for (const SourceFile& source : solution.sources) hasher.add(source.path).add(source.content);
  result.cache_key = hasher.hex();
  if (auto library = CudaBuild::cached(options.cache_dir, result.cache_key, kLibrary, "torch")) {
    result.ok = result.cached = true;
    result.library = *library;
    result.seconds = seconds_since(start);
    return result;
  }

  CudaBuild build(options.cache_dir, result.cache_key, "torch");
  if (python_source)
    for (const SourceFile& source : solution.sources)
      write_build_file(build.work_dir() / "src" / source.path, source.content);
  if (extension) place_file(*extension, build.work_dir() / module.file);
  write_build_file(build.work_dir() / "shim" / "ka_torch_shim_config.h", config);
  write_build_file(build.work_dir() / "kernelarc_torch_host.py",
                   read_text_file(script("kernelarc_torch_host.py")));
  const std::string libpython = python->facts.value("libpython", "");
  const std::vector<std::string> link_shim = {
      find_executable("cc").value_or("cc"),
      "-std=gnu11",
      "-O2",
      "-fPIC",
      "-shared",
      "-Ishim",
      "-I" + abi_include_dir().string(),
      "-I" + python->facts.value("include", ""),
      script("kernelarc_torch_shim.c").string(),
      "-o",
      kLibrary,
      libpython,
      "-Wl,-rpath," + std::filesystem::path(libpython).parent_path().string(),
      "-ldl",
      "-lpthread"};
  if (!run_step(link_shim, build.work_dir(), options.timeout, log))
    return failed(trim_build_log(log));
  write_build_file(build.work_dir() / "build.log", log);
  result.library = build.commit(kLibrary);
  result.ok = true;
  result.log = trim_build_log(log);
  result.seconds = seconds_since(start);
  return result;
}

}  // namespace kernelarc

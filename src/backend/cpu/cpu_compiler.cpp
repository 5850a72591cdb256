#include "backend/cpu/cpu_compiler.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <system_error>

#include "backend/build_input_policy.h"
#include "backend/compile_sandbox.h"
#include "backend/device.h"
#include "backend/process.h"
#include "backend/solution_knobs.h"
#include "core/elapsed.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"

namespace kernelarc {
namespace {

using Clock = std::chrono::steady_clock;

// A compile log keeps its head: the first errors explain the rest.
constexpr std::size_t kLogLines = 60;
// Bumped when the build recipe changes, so old cache entries are not reused.
constexpr std::string_view kRecipeVersion = "kernelarc-cpu-build-2";  // 2: -fno-gnu-unique

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream stream(text);
  std::vector<std::string> words;
  for (std::string word; stream >> word;) words.push_back(word);
  return words;
}

std::string trim_log(const std::string& output) {
  std::istringstream stream(output);
  std::string trimmed;
  std::size_t lines = 0;
  for (std::string line; std::getline(stream, line); ++lines)
    if (lines < kLogLines) trimmed += line + "\n";
  if (lines > kLogLines) trimmed += "... (" + std::to_string(lines - kLogLines) + " more lines)\n";
  return trimmed;
}

/// `<compiler> --version`, run once per compiler command per process.
std::string compiler_version(const std::vector<std::string>& command) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::string> versions;
  std::lock_guard lock(mutex);
  auto found = versions.find(command);
  if (found != versions.end()) return found->second;
  std::vector<std::string> argv = command;
  argv.push_back("--version");
  CommandResult result = run_command(argv, std::chrono::seconds(30));
  return versions[command] = result.output;
}

bool is_gcc(const std::vector<std::string>& command) {
  const std::string version = compiler_version(command);
  return version.find("Free Software Foundation") != std::string::npos &&
         version.find("clang") == std::string::npos;
}

enum class Language { Cxx, C, Other };

Language language_of(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".cpp" || extension == ".cc" || extension == ".cxx") return Language::Cxx;
  if (extension == ".c") return Language::C;
  return Language::Other;
}

void check_source_path(const Solution& solution, const std::string& path) {
  std::filesystem::path relative(path);
  bool escapes = relative.empty() || relative.is_absolute();
  for (const auto& part : relative.lexically_normal())
    if (part == "..") escapes = true;
  if (escapes) {
    throw_input_error(solution.path.empty() ? solution.name : solution.path.string(), "sources",
                      "source path \"" + path + "\" must be relative and stay inside the solution");
  }
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream file(path, std::ios::binary);
  file.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!file) throw InternalError("cannot write " + path.string());
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line = "$";
  for (const std::string& arg : argv) line += " " + arg;
  return line + "\n";
}

/// Compiles inside `build_dir` (sources already in build_dir/src) to build_dir/lib.so.
/// Returns the failure log, or nullopt on success; `output` gets all compiler output.
std::optional<std::string> build(const Solution& solution, const CpuCompileOptions& options,
                                 const std::vector<std::string>& compiler,
                                 const std::vector<std::string>& knob_flags,
                                 const std::filesystem::path& build_dir, std::string& output) {
  auto deadline = Clock::now() + options.timeout;
  std::vector<std::string> common;
  common.insert(common.end(), options.flags.begin(), options.flags.end());
  common.insert(common.end(), solution.cflags.begin(), solution.cflags.end());
  common.insert(common.end(), knob_flags.begin(), knob_flags.end());
  common.push_back("-I" + abi_include_dir().string());
  common.push_back("-Isrc");

  // Synthesized code may #include any path: its compiler reads only the toolchain and build_dir.
  std::optional<std::vector<std::string>> environment;
  std::optional<SandboxOptions> sandbox;
  if (is_synthesized_solution(solution)) {
    environment = compile_environment(build_dir);
    sandbox = compile_sandbox(build_dir, {compiler.front()});
  }
  auto run = [&](const std::vector<std::string>& argv) -> std::optional<std::string> {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    CommandResult result = run_command(argv, std::max(left, std::chrono::milliseconds(1)),
                                       build_dir, environment, sandbox);
    output += command_line(argv) + result.output;
    if (result.timed_out)
      return "the compiler did not finish within " + std::to_string(options.timeout.count()) +
             " s and was killed\n" + trim_log(command_line(argv) + result.output);
    if (result.status.signaled || result.status.exit_code != 0)
      return trim_log(command_line(argv) + result.output + "(the compiler " +
                      describe_exit(result.status) + ")\n");
    return std::nullopt;
  };

  std::vector<std::string> link = compiler;
  link.insert(link.end(), {"-std=c++20", "-shared", "-fPIC"});
  // Each candidate keeps its own statics: GCC would export a template's function-local static
  // as a GNU unique symbol, shared by every library the worker has loaded despite RTLD_LOCAL
  // (see cuda_compiler.cpp). Clang emits no such symbols and rejects the flag.
  if (is_gcc(compiler)) link.push_back("-fno-gnu-unique");
  link.insert(link.end(), common.begin(), common.end());
  int objects = 0;
  for (const SourceFile& source : solution.sources) {
    Language language = language_of(source.path);
    if (language == Language::Cxx) link.push_back("src/" + source.path);
    if (language != Language::C) continue;
    // C sources compile on their own, as C, into objects for the final link.
    std::string object = "c" + std::to_string(objects++) + ".o";
    std::vector<std::string> argv = compiler;
    argv.insert(argv.end(), {"-x", "c", "-std=c11", "-fPIC"});
    argv.insert(argv.end(), common.begin(), common.end());
    argv.insert(argv.end(), {"-c", "src/" + source.path, "-o", object});
    if (auto failure = run(argv)) return failure;
    link.push_back(object);
  }
  link.insert(link.end(), {"-o", "lib.so"});
  link.insert(link.end(), solution.ld_flags.begin(), solution.ld_flags.end());
  return run(link);
}

}  // namespace

std::string default_cpu_compiler() {
  const char* cxx = std::getenv("CXX");
  return cxx && *cxx ? cxx : "c++";
}

CompileResult compile_cpu_solution(const Solution& solution, const CpuCompileOptions& options) {
  auto start = Clock::now();
  auto elapsed = [&] { return seconds_since(start); };
  if (options.cache_dir.empty()) throw InternalError("compile_cpu_solution: no cache_dir given");
  CompileResult result;
  // A stored synthesized solution is checked again: it may predate the allowlist.
  if (is_synthesized_solution(solution)) {
    if (auto refused = refuse_build_inputs(solution)) {
      result.log = "refused to build a synthesized solution: " + *refused;
      return result;
    }
  }

  std::vector<std::string> compiler = split_words(options.compiler);
  std::optional<std::string> resolved =
      compiler.empty() ? std::nullopt : find_executable(compiler[0]);
  if (!resolved) {
    result.log = "compiler \"" + options.compiler + "\" not found on PATH";
    return result;
  }
  compiler[0] = *resolved;
  bool compilable = false;
  for (const SourceFile& source : solution.sources) {
    check_source_path(solution, source.path);
    compilable = compilable || language_of(source.path) != Language::Other;
  }
  if (!compilable) {
    result.log = "the solution has no .cpp, .cc, .cxx or .c source to compile";
    return result;
  }
  std::map<std::string, int64_t> knobs;
  if (auto error = parse_knobs(solution.ext, knobs)) {
    result.log = *error;
    return result;
  }
  const std::vector<std::string> knob_flags = knob_defines(knobs);

  ContentHasher hasher;
  // -march=native makes the binary depend on the host CPU; the ABI header is compiled in.
  std::ifstream abi_header(abi_include_dir() / "kernelarc" / "abi.h");
  std::string abi_text((std::istreambuf_iterator<char>(abi_header)),
                       std::istreambuf_iterator<char>());
  hasher.add(kRecipeVersion).add(compiler_version(compiler)).add(host_cpu_model()).add(abi_text);
  for (const std::string& word : compiler) hasher.add(word);
  for (const auto* list : {&options.flags, &solution.cflags, &knob_flags, &solution.ld_flags}) {
    hasher.add(std::to_string(list->size()));
    for (const std::string& flag : *list) hasher.add(flag);
  }
  for (const SourceFile& source : solution.sources) hasher.add(source.path).add(source.content);
  result.cache_key = hasher.hex();

  std::filesystem::path root = options.cache_dir / "cpu";
  std::filesystem::path final_dir = root / result.cache_key;
  if (std::filesystem::exists(final_dir / "lib.so")) {
    result.ok = result.cached = true;
    result.library = final_dir / "lib.so";
    result.seconds = elapsed();
    return result;
  }

  // Built under a private name and renamed into place, so concurrent builds of one key never
  // see each other's half-written files; the first rename wins, the others are discarded.
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path build_dir =
      root / (".tmp-" + result.cache_key + "-" + std::to_string(getpid()) + "-" +
              std::to_string(counter++));
  std::filesystem::remove_all(build_dir);
  for (const SourceFile& source : solution.sources)
    write_file(build_dir / "src" / source.path, source.content);

  std::string output;
  std::optional<std::string> failure =
      build(solution, options, compiler, knob_flags, build_dir, output);
  std::error_code ignored;
  if (failure) {
    std::filesystem::remove_all(build_dir, ignored);
    result.log = *failure;
    result.seconds = elapsed();
    return result;
  }
  write_file(build_dir / "build.log", output);
  std::error_code renamed;
  std::filesystem::rename(build_dir, final_dir, renamed);
  if (renamed) std::filesystem::remove_all(build_dir, ignored);  // another build won the race
  if (!std::filesystem::exists(final_dir / "lib.so"))
    throw InternalError("cannot move the build of " + result.cache_key + " into " +
                        final_dir.string() + ": " + renamed.message());
  result.ok = true;
  result.library = final_dir / "lib.so";
  result.log = trim_log(output);
  result.seconds = elapsed();
  return result;
}

}  // namespace kernelarc

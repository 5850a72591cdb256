// `kernelarc import kernelbench <file.py> <out-dir>`: a KernelBench problem file (class Model,
// get_inputs, get_init_inputs) becomes a problem directory. python/kernelarc_import_kernelbench.py
// runs the file under the interpreter the oracle would use and writes the definition; the problem
// is then loaded as any other, so an import that succeeds is a problem that loads.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "core/paths.h"
#include "core/problem.h"
#include "oracle/python_bridge.h"
#include "oracle/subprocess.h"

namespace kernelarc {

namespace {

// Exit code of the import script for a file that is not a usable KernelBench problem.
constexpr int kExitBadFile = 2;
// Running a KernelBench file means building its model and one forward pass on the CPU.
constexpr std::chrono::seconds kImportTimeout{600};

struct ImportFlags {
  std::string file;
  std::string out_dir;
  std::string python;
};

/// Removes the import's scratch files (the script's log and result) whatever happens.
struct ScratchFiles {
  std::filesystem::path dir;
  explicit ScratchFiles(std::filesystem::path path) : dir(std::move(path)) {
    std::filesystem::create_directories(dir);
  }
  ~ScratchFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  ScratchFiles(const ScratchFiles&) = delete;
  ScratchFiles& operator=(const ScratchFiles&) = delete;
};

/// The interpreter the oracle would run the reference with (--python, KERNELARC_PYTHON or
/// detection): the oracle's own start-up finds it, and explains itself when none has torch.
std::string oracle_interpreter(const ImportFlags& flags, const std::filesystem::path& scratch) {
  PythonBridge bridge(flags.python, "cpu", kImportTimeout);
  bridge.description(scratch / "detect");
  return bridge.interpreter();
}

int run_import_kernelbench(const ImportFlags& flags) {
  if (!std::filesystem::is_regular_file(flags.file))
    throw_input_error(flags.file, "", "no such file (expected a KernelBench problem, a .py file)");
  std::filesystem::create_directories(flags.out_dir);
  const ScratchFiles scratch(std::filesystem::path(flags.out_dir) /
                             fmt::format(".kernelarc-import-{}", getpid()));
  const std::string python = oracle_interpreter(flags, scratch.dir);

  const std::filesystem::path script = data_dir() / "python" / "kernelarc_import_kernelbench.py";
  const std::filesystem::path result_file = scratch.dir / "result.json";
  const std::filesystem::path log = scratch.dir / "import.log";
  const auto deadline = std::chrono::steady_clock::now() + kImportTimeout;
  const ProcessResult process =
      run_process({python, script.string(), flags.file, flags.out_dir, result_file.string()}, log,
                  [&] { return std::chrono::steady_clock::now() < deadline; });
  const std::string output = file_tail(log);
  if (process.started && process.exit_code == kExitBadFile) throw InputError(output);
  if (!process.started || process.exit_code != 0 || !std::filesystem::exists(result_file)) {
    const std::string how = !process.started ? "could not start: " + process.spawn_error
                            : process.stopped
                                ? fmt::format("ran past {} s", kImportTimeout.count())
                                : fmt::format("ended with exit code {}", process.exit_code);
    throw InternalError(fmt::format("{} {} {}{}", python, script.string(), how,
                                    output.empty() ? "" : ":\n" + output));
  }

  const OrderedJson result = parse_json_text(read_text_file(result_file), result_file.string());
  const std::filesystem::path problem_dir = result.at("problem_dir").get<std::string>();
  const Problem problem = load_problem(problem_dir);
  const auto names = [](const std::vector<TensorSpec>& specs) {
    std::vector<std::string> result;
    for (const TensorSpec& spec : specs) result.push_back(spec.name);
    return fmt::format("{}", fmt::join(result, ", "));
  };
  std::cout << fmt::format("imported {} as problem {} in {} (inputs: {}; outputs: {})\n",
                           flags.file, problem.definition.name, problem_dir.string(),
                           names(problem.definition.inputs), names(problem.definition.outputs));
  return 0;
}

}  // namespace

CommandRunner add_import_command(CLI::App& app) {
  auto flags = std::make_shared<ImportFlags>();
  auto* import = app.add_subcommand("import", "make a kernelarc problem from another format");
  import->require_subcommand(1);
  auto* kernelbench = import->add_subcommand(
      "kernelbench", "a KernelBench file (class Model, get_inputs, get_init_inputs)");
  kernelbench->add_option("file", flags->file, "the KernelBench problem (.py)")->required();
  kernelbench->add_option("out_dir", flags->out_dir, "where <name>/definition.json is written")
      ->required();
  kernelbench->add_option("--python", flags->python,
                          "Python with torch to run the file (default: as the oracle)");
  return [flags] { return run_import_kernelbench(*flags); };
}

}  // namespace kernelarc

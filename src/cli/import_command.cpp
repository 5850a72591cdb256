// `kernelarc import kernelbench <file.py | dir>... <out-dir>` (and, through
// import_commands.h, the other formats): KernelBench problem files (class
// Model, get_inputs, get_init_inputs) become problem directories.
// python/kernelarc_import_kernelbench.py runs the files, all in one interpreter (the one the
// oracle would use, detected once), and writes the definitions; each problem is then loaded as
// any other, so an import that succeeds is a problem that loads. A file that fails, even one that
// kills the interpreter, fails alone: the rest go to a fresh interpreter.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/import_commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "core/paths.h"
#include "core/problem.h"
#include "oracle/python_bridge.h"
#include "oracle/python_environment.h"
#include "oracle/subprocess.h"

namespace kernelarc {

namespace {

// Running a KernelBench file means building its model and one forward pass on the CPU; the
// watchdog allows this long per file without a result.
constexpr std::chrono::seconds kFileTimeout{600};

struct ImportFlags {
  std::vector<std::string> paths;
  std::string out_dir;
  std::string python;
  std::string report;
};

/// What became of one file: the problem it wrote, or why none.
struct FileOutcome {
  std::string file;
  std::optional<std::filesystem::path> problem_dir;
  std::string name;
  std::string error;
};

/// Removes the import's scratch files (the script's logs and results) whatever happens.
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

/// "2_b.py" before "10_a.py": KernelBench numbers its files, so a leading number sorts first.
bool kernelbench_order(const std::string& a, const std::string& b) {
  const auto key = [](const std::string& path) {
    const std::string name = std::filesystem::path(path).filename().string();
    const std::size_t digits = name.find_first_not_of("0123456789");
    const std::size_t number =
        digits == 0 || digits > 18 ? SIZE_MAX : std::stoull(name.substr(0, digits));
    return std::pair(number, name);
  };
  return key(a) < key(b);
}

/// The files named, each once, a directory standing for its .py files; a path that is neither
/// fails at once (its outcome is returned in `missing`).
std::vector<std::string> expand_paths(const std::vector<std::string>& paths,
                                      std::vector<FileOutcome>& missing) {
  std::vector<std::string> files;
  std::set<std::string> seen;
  const auto add = [&](const std::string& file) {
    if (seen.insert(std::filesystem::weakly_canonical(file).string()).second) files.push_back(file);
  };
  for (const std::string& path : paths) {
    if (std::filesystem::is_directory(path)) {
      std::vector<std::string> found;
      for (const auto& entry : std::filesystem::directory_iterator(path)) {
        if (entry.is_regular_file() && entry.path().extension() == ".py")
          found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end(), kernelbench_order);
      if (found.empty())
        missing.push_back({path, {}, "", path + ": the directory has no .py file"});
      for (const std::string& file : found) add(file);
    } else if (std::filesystem::is_regular_file(path)) {
      add(path);
    } else {
      missing.push_back(
          {path, {}, "", path + ": no such file (expected a KernelBench problem, a .py file)"});
    }
  }
  return files;
}

/// The interpreter the oracle would run the reference with (--python, KERNELARC_PYTHON or
/// detection): the oracle's own start-up finds it, and explains itself when none has torch.
std::string oracle_interpreter(const ImportFlags& flags, const std::filesystem::path& scratch) {
  PythonBridge bridge(flags.python, "cpu", kFileTimeout);
  bridge.description(scratch / "detect");
  return bridge.interpreter();
}

/// Runs the import script over `files` until each has an outcome, restarting the interpreter
/// after the file it died (or stalled) on.
class BatchImport {
 public:
  BatchImport(std::string python, std::filesystem::path out_dir, std::filesystem::path scratch)
      : python_(std::move(python)), out_dir_(std::move(out_dir)), scratch_(std::move(scratch)) {}

  std::map<std::string, FileOutcome> run(const std::vector<std::string>& files) {
    std::vector<std::string> remaining = files;
    for (int attempt = 0; !remaining.empty(); ++attempt) remaining = run_once(remaining, attempt);
    return std::move(outcomes_);
  }

 private:
  /// One interpreter over `files`; returns those it never started on.
  std::vector<std::string> run_once(const std::vector<std::string>& files, int attempt) {
    const std::filesystem::path results = scratch_ / fmt::format("results-{}.jsonl", attempt);
    const std::filesystem::path log = scratch_ / fmt::format("import-{}.log", attempt);
    const std::filesystem::path script = data_dir() / "python" / "kernelarc_import_kernelbench.py";
    std::vector<std::string> argv = {python_, script.string(), out_dir_.string(), results.string()};
    argv.insert(argv.end(), files.begin(), files.end());

    // The watchdog's clock restarts whenever the script reports progress.
    auto deadline = std::chrono::steady_clock::now() + kFileTimeout;
    std::uintmax_t reported = 0;
    const ProcessResult process = run_process(
        argv, log,
        [&] {
          std::error_code ignored;
          const std::uintmax_t size = std::filesystem::file_size(results, ignored);
          if (!ignored && size != reported) {
            reported = size;
            deadline = std::chrono::steady_clock::now() + kFileTimeout;
          }
          return std::chrono::steady_clock::now() < deadline;
        },
        oracle_python_environment(), /*python_script=*/true);

    std::optional<std::string> running;
    std::vector<std::string> started;
    for (const OrderedJson& event : read_events(results)) {
      const std::string file = event.at("file").get<std::string>();
      if (event.at("event") == "start") {
        running = file;
        started.push_back(file);
        continue;
      }
      running.reset();
      FileOutcome outcome{file, {}, "", ""};
      if (event.at("ok").get<bool>()) {
        outcome.problem_dir = event.at("problem_dir").get<std::string>();
        outcome.name = event.at("name").get<std::string>();
      } else {
        outcome.error = event.at("error").get<std::string>();
      }
      outcomes_[file] = std::move(outcome);
    }

    const std::string how = process.stopped
                                ? fmt::format("gave no result for {} s", kFileTimeout.count())
                                : describe_end(process);
    const std::string output = file_tail(log);
    const std::string failure =
        fmt::format("the import script ({} {}) failed: {}{}", python_, script.string(), how,
                    output.empty() ? "" : ":\n" + output);
    if (running) {
      outcomes_[*running] = {*running, {}, "", *running + ": while importing it, " + failure};
    }
    std::vector<std::string> never_started;
    for (const std::string& file : files) {
      if (std::find(started.begin(), started.end(), file) == started.end())
        never_started.push_back(file);
    }
    // Without a file to blame the interpreter fails before any file: retrying would not help.
    if (started.empty() || process.exited_with(0)) {
      for (const std::string& file : never_started) outcomes_[file] = {file, {}, "", failure};
      return {};
    }
    return never_started;
  }

  static std::vector<OrderedJson> read_events(const std::filesystem::path& results) {
    std::vector<OrderedJson> events;
    if (!std::filesystem::exists(results)) return events;
    std::istringstream lines(read_text_file(results));
    for (std::string line; std::getline(lines, line);) {
      // A line cut short by a killed interpreter is simply not an event.
      OrderedJson event = OrderedJson::parse(line, nullptr, false);
      if (!event.is_discarded() && event.contains("event") && event.contains("file"))
        events.push_back(std::move(event));
    }
    return events;
  }

  std::string python_;
  std::filesystem::path out_dir_;
  std::filesystem::path scratch_;
  std::map<std::string, FileOutcome> outcomes_;
};

std::string names_of(const std::vector<TensorSpec>& specs) {
  std::vector<std::string> names;
  for (const TensorSpec& spec : specs) names.push_back(spec.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

/// Loads the problem an import wrote, so that a success is a problem that loads.
void prove_loads(FileOutcome& outcome) {
  if (!outcome.problem_dir) return;
  try {
    const Problem problem = load_problem(*outcome.problem_dir);
    std::cout << fmt::format("imported {} as problem {} in {} (inputs: {}; outputs: {})\n",
                             outcome.file, problem.definition.name, outcome.problem_dir->string(),
                             names_of(problem.definition.inputs),
                             names_of(problem.definition.outputs));
  } catch (const InputError& error) {
    outcome.error = outcome.file + ": the problem it became does not load: " + error.what();
    outcome.problem_dir.reset();
  }
}

void write_report(const std::filesystem::path& path, const std::vector<FileOutcome>& outcomes) {
  OrderedJson report = OrderedJson::array();
  for (const FileOutcome& outcome : outcomes) {
    OrderedJson entry = {{"file", outcome.file}};
    if (outcome.problem_dir) {
      entry["problem_dir"] = outcome.problem_dir->string();
      entry["name"] = outcome.name;
    } else {
      entry["error"] = outcome.error;
    }
    report.push_back(std::move(entry));
  }
  write_file_atomically(path, report.dump(2) + "\n");
}

int run_import_kernelbench(const ImportFlags& flags) {
  std::vector<FileOutcome> missing;
  const std::vector<std::string> files = expand_paths(flags.paths, missing);
  std::filesystem::create_directories(flags.out_dir);
  std::map<std::string, FileOutcome> imported;
  if (!files.empty()) {
    const ScratchFiles scratch(std::filesystem::path(flags.out_dir) /
                               fmt::format(".kernelarc-import-{}", getpid()));
    BatchImport batch(oracle_interpreter(flags, scratch.dir), flags.out_dir, scratch.dir);
    imported = batch.run(files);
  }

  std::vector<FileOutcome> outcomes = missing;
  for (const std::string& file : files) {
    FileOutcome outcome = imported.at(file);
    prove_loads(outcome);
    outcomes.push_back(std::move(outcome));
  }
  if (!flags.report.empty()) write_report(flags.report, outcomes);

  std::vector<const FileOutcome*> failed;
  for (const FileOutcome& outcome : outcomes) {
    if (!outcome.problem_dir) failed.push_back(&outcome);
  }
  if (outcomes.size() == 1 && !failed.empty()) throw InputError(failed.front()->error);
  for (const FileOutcome* outcome : failed) std::cerr << "not imported: " << outcome->error << '\n';
  if (outcomes.size() > 1) {
    std::cout << fmt::format("imported {} of {} files into {}\n", outcomes.size() - failed.size(),
                             outcomes.size(), flags.out_dir);
  }
  if (!failed.empty()) {
    throw InputError(fmt::format("{} of {} files could not be imported (each is listed above)",
                                 failed.size(), outcomes.size()));
  }
  return 0;
}

}  // namespace

CommandRunner add_import_command(CLI::App& app) {
  auto flags = std::make_shared<ImportFlags>();
  auto* import = app.add_subcommand("import", "make kernelarc problems from another format");
  import->require_subcommand(1);
  auto* kernelbench = import->add_subcommand(
      "kernelbench", "KernelBench files (class Model, get_inputs, get_init_inputs)");
  // One positional list: CLI11 gives a list positional every argument, so the output directory
  // is taken from its end.
  kernelbench
      ->add_option("paths", flags->paths,
                   "KernelBench problems (.py files, or directories of them), then the output "
                   "directory (where <name>/definition.json is written)")
      ->required();
  kernelbench->add_option("--python", flags->python,
                          "Python with torch to run the files (default: as the oracle)");
  kernelbench->add_option("--report", flags->report,
                          "also write what became of each file as JSON: [{file, problem_dir, "
                          "name} or {file, error}]");
  CommandRunner flashinfer = add_import_flashinfer(*import);
  return [flags, kernelbench, flashinfer] {
    if (!kernelbench->parsed()) return flashinfer();
    if (flags->paths.size() < 2) {
      throw InputError(
          "import kernelbench: expected KernelBench files (or directories) and then the output "
          "directory, got " +
          std::to_string(flags->paths.size()) + " path");
    }
    ImportFlags split = *flags;
    split.out_dir = split.paths.back();
    split.paths.pop_back();
    return run_import_kernelbench(split);
  };
}

}  // namespace kernelarc

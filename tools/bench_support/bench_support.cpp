#include "bench_support.h"

#include <algorithm>
#include <iostream>

#include "backend/backend.h"
#include "core/error.h"

namespace kernelarc {

std::vector<std::string> builtin_problems(const std::string& device) {
  std::vector<std::string> problems;
  const auto root =
      std::filesystem::path(KERNELARC_SOURCE_DIR) / "problems" / backend_for(device).kind_name();
  for (const auto& entry : std::filesystem::directory_iterator(root))
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "definition.json"))
      problems.push_back(entry.path().string());
  std::sort(problems.begin(), problems.end());
  return problems;
}

std::vector<std::string> BenchFlags::problem_dirs() const {
  return problems.empty() ? builtin_problems(device) : problems;
}

BenchGuardOptions BenchFlags::guard_options() const {
  return {device, workspace, trials, iterations};
}

void add_bench_flags(CLI::App& app, BenchFlags& flags) {
  app.add_option("problems", flags.problems, "problem directories (default: the built-in ones)");
  app.add_option("--device", flags.device, "cpu or cuda:N")->capture_default_str();
  app.add_option("--workspace", flags.workspace, "workspace for the runs")->capture_default_str();
  app.add_option("--budget", flags.budget, "candidates per run")->capture_default_str();
  app.add_option("--trials", flags.trials, "correctness draws per workload")->capture_default_str();
  app.add_option("--iterations", flags.iterations, "timed runs per workload")
      ->capture_default_str();
}

int run_bench(CLI::App& app, int argc, char** argv, const std::function<int()>& run) {
  CLI11_PARSE(app, argc, argv);
  try {
    return run();
  } catch (const InputError& error) {
    std::cerr << "error: " << error.what() << '\n';
    return 2;
  }
}

// The CLI's guard session with the benchmark's fewer draws and timed runs, no baselines.
BenchGuard::BenchGuard(const BenchGuardOptions& options) {
  GuardFlags flags;
  flags.device = options.device;
  flags.workspace = options.workspace.string();
  flags.trials = options.trials;
  flags.warmup = 1;
  flags.iterations = options.iterations;
  flags.no_baseline = true;
  flags.worker_executable = KERNELARC_BINARY;
  session_ = std::make_unique<GuardSession>(flags);
}

BenchGuard::~BenchGuard() = default;

}  // namespace kernelarc

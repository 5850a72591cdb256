// `kernelarc bench <suite-dir>`: the flags of the bench service (app/bench_session.h), its
// progress on the terminal, and its tables.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/bench_session.h"
#include "cli/commands.h"
#include "cli/guard_flags.h"
#include "cli/optimize_progress.h"

namespace kernelarc {

namespace {

struct BenchFlags {
  BenchOptions options;
  double wall_time_seconds = 0;  ///< --wall-time as parsed
  bool plain = false;
};

/// This process's command line as typed (arguments with spaces quoted).
std::string command_line() {
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> parts;
  for (std::string part; std::getline(file, part, '\0');)
    parts.push_back(part.find(' ') == std::string::npos ? part : "'" + part + "'");
  return fmt::format("{}", fmt::join(parts, " "));
}

int run_bench_command(const BenchFlags& flags) {
  BenchOptions options = flags.options;
  options.command = command_line();
  const BenchOutput output{
      std::cout, [&] { return make_progress(std::cout, !flags.plain && isatty(STDOUT_FILENO)); },
      [](const BenchProblem& problem) { print_bench_problem(problem, std::cout); }};
  const BenchOutcome outcome = run_bench_session(options, output);
  print_bench_summary(outcome.report, std::cout);
  if (!outcome.report.remaining.empty())
    std::cout << fmt::format(
        "stopped after --wall-time {:.0f} s: {} problem(s) remain; rerun with --resume to "
        "finish\n",
        *options.wall_time_s, outcome.report.remaining.size());
  std::cout << fmt::format("wrote {} and {}\n", (outcome.out / "bench.json").string(),
                           (outcome.out / "bench.md").string());
  return 0;
}

}  // namespace

CommandRunner add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  BenchOptions& options = flags->options;
  auto* cmd = app.add_subcommand(
      "bench", "kernelarc against PyTorch eager, torch.compile and cuBLASLt on a suite");
  cmd->add_option("suite", options.suite, "directory of problem directories")->required();
  cmd->add_option("--budget", options.budget, "candidates kernelarc evaluates per problem")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000}));
  cmd->add_option("--problems", options.problems,
                  "only these problems (directory or definition names, comma separated)")
      ->delimiter(',');
  cmd->add_flag("--resume", options.resume, "skip the problems bench.json already holds");
  cmd->add_option("--out", options.out,
                  "where bench.json and bench.md go (default WORKSPACE/bench/SUITE-DIR-NAME)");
  auto* wall_time =
      cmd->add_option("--wall-time", flags->wall_time_seconds,
                      "start no new problem after this many seconds (at least one is benched)")
          ->check(CLI::NonNegativeNumber);
  cmd->add_option("--rounds", options.rounds,
                  "interleaved rounds of the side-by-side re-measurement (and of the search's)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--plain", flags->plain, "line output even on a terminal");
  cmd->add_flag("--baselines-always", options.baselines_always,
                "time PyTorch even for a problem that no family or template serves");
  cmd->add_flag("--keep-accuracy", options.keep_accuracy,
                "search no knob value that gives up accuracy the reference keeps (fast FP8 "
                "accumulation): like-for-like speedups");
  add_guard_flags(*cmd, options.guard);
  // Bench writes its own files and always times the baselines.
  cmd->remove_option(cmd->get_option("--json"));
  cmd->remove_option(cmd->get_option("--no-baseline"));
  return [flags, wall_time] {
    if (wall_time->count() > 0) flags->options.wall_time_s = flags->wall_time_seconds;
    return run_bench_command(*flags);
  };
}

}  // namespace kernelarc

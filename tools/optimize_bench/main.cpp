// optimize_bench: does a search with several agents find faster kernels than one, at the same
// total candidate budget, and which selection policy does best? For every problem and every
// configuration (1, 4 and 6 agents with MCTS; 6 agents with each policy) it runs the
// orchestrator with the same budget and seeds and prints the winner's time at the largest
// workload, from the final side-by-side re-measurement, with its 95% interval, and its speedup
// over the bundled baseline. Every run goes through the guard; nothing here is a test.
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "bench_support.h"
#include "core/error.h"
#include "optimize/search_setup.h"
#include "optimize/strategy.h"
#include "search/selection.h"

namespace kernelarc {
namespace {

struct Config {
  std::string name;
  std::string agents;
  std::string policy;
};

struct Flags : BenchFlags {
  int seeds = 1;
  bool all_workloads = false;
};

int run(const Flags& flags) {
  const std::vector<Config> configs{
      {"1 agent (explore), mcts", "1", "mcts"}, {"4 agents, mcts", "4", "mcts"},
      {"6 agents, mcts", "6", "mcts"},          {"6 agents, random", "6", "random"},
      {"6 agents, beam", "6", "beam"},          {"6 agents, islands", "6", "islands"},
  };
  BenchGuard bench_guard(flags.guard_options());
  Guard& guard = bench_guard.guard();
  Workspace workspace(flags.workspace);

  std::cout << fmt::format(
      "optimize_bench on {}: budget {} candidates per run, {} seed(s), guard {} trial(s) x {} "
      "timed runs; best = the winner's median at the largest workload from the final "
      "side-by-side re-measurement (95% CI); speedup over the bundled baseline (interval)\n",
      flags.device, flags.budget, flags.seeds, flags.trials, flags.iterations);
  std::cout << fmt::format("{:<22} {:<26} {:>4} {:>10} {:>21} {:>22} {:>7}\n", "problem",
                           "configuration", "seed", "best_ms", "ci95_ms", "speedup", "wall_s");
  for (const std::string& dir :
       flags.problem_dirs()) {
    SearchSetupOptions setup_options;
    setup_options.device = flags.device;
    const SearchSetup setup(dir, setup_options);
    std::vector<Workload> workloads = setup.problem().workloads;
    if (!flags.all_workloads) workloads = {largest_workload(workloads)};
    const OptimizeTarget target = setup.target(workloads);
    GuardEvaluator evaluator(guard, guard, setup.problem(), workloads, flags.device);
    for (const Config& config : configs) {
      for (int seed = 1; seed <= flags.seeds; ++seed) {
        OptimizeOptions options;
        options.budget = flags.budget;
        options.agents = parse_agent_list(config.agents);
        options.policy = config.policy;
        options.seed = static_cast<uint64_t>(seed);
        options.build_ahead = flags.device == "cpu" ? 0 : 2;
        options.final_candidates = 2;
        options.final_rounds = 2;
        RecordingProgress progress;
        const auto started = std::chrono::steady_clock::now();
        Orchestrator orchestrator(target, evaluator, workspace, options, progress);
        const OptimizeSummary summary = orchestrator.run();
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        std::string best = "-", ci = "-", speedup = "-";
        if (!summary.finalists.empty()) {
          const auto& time =
              summary.finalists.front().measurement.times.at(target.largest_workload);
          best = fmt::format("{:.4f}", time.median_ms);
          ci = fmt::format("{:.4f}-{:.4f}", time.ci_low_ms, time.ci_high_ms);
        }
        if (summary.speedup)
          speedup = fmt::format("{:.2f}x ({:.2f}-{:.2f})", summary.speedup->value,
                                summary.speedup->low, summary.speedup->high);
        std::cout << fmt::format("{:<22} {:<26} {:>4} {:>10} {:>21} {:>22} {:>7.0f}\n",
                                 setup.problem().definition.name, config.name, seed, best, ci,
                                 speedup, wall)
                  << std::flush;
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace kernelarc

int main(int argc, char** argv) {
  CLI::App app{"compare agent counts and policies of kernelarc optimize at equal budget"};
  kernelarc::Flags flags;
  flags.workspace = ".kernelarc-bench";
  kernelarc::add_bench_flags(app, flags);
  app.add_option("--seeds", flags.seeds, "runs per configuration")->capture_default_str();
  app.add_flag("--all-workloads", flags.all_workloads,
               "search on every workload (default: the largest only)");
  return kernelarc::run_bench(app, argc, argv, [&] { return kernelarc::run(flags); });
}

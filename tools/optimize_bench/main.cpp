// optimize_bench: does a search with several agents find faster kernels than one, at the same
// total candidate budget, and which selection policy does best? For every problem and every
// configuration (1, 4 and 6 agents with MCTS; 6 agents with each policy) it runs the
// orchestrator with the same budget and seeds and prints the winner's time at the largest
// workload, from the final side-by-side re-measurement, with its 95% interval, and its speedup
// over the bundled baseline. Every run goes through the guard; nothing here is a test.
// Finished rows are kept in a file (bench_rows.h), so a benchmark cut short resumes where it
// stopped. At the end, each configuration is set against the single agent. The search's
// measurements of a problem are shared between its configurations (shared_evaluations.h).
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "backend/backend.h"
#include "bench_rows.h"
#include "bench_support.h"
#include "core/elapsed.h"
#include "core/error.h"
#include "optimize/search_setup.h"
#include "optimize/strategy.h"
#include "search/selection.h"
#include "shared_evaluations.h"

namespace kernelarc {
namespace {

struct Config {
  std::string name;
  std::string agents;
  std::string policy;
};

const std::vector<Config> kConfigs{
    {"1 agent (explore), mcts", "1", "mcts"}, {"4 agents, mcts", "4", "mcts"},
    {"6 agents, mcts", "6", "mcts"},          {"6 agents, random", "6", "random"},
    {"6 agents, beam", "6", "beam"},          {"6 agents, islands", "6", "islands"},
};

struct Flags : BenchFlags {
  int seeds = 1;
  bool all_workloads = false;
  std::string results;  ///< the rows file; default <workspace>/optimize_bench.jsonl
};

std::string interval(const std::optional<double>& low, const std::optional<double>& high,
                     const char* format) {
  if (!low || !high) return "-";
  return fmt::format(fmt::runtime(format), *low, *high);
}

/// The run handed the baseline back: its winner's speedup interval lies below 1, as the
/// orchestrator's kept_baseline decides.
bool slower_than_baseline(const BenchRow& row) {
  return row.speedup_high && *row.speedup_high < 1.0;
}

void print_row(const BenchRow& row, bool stored) {
  const std::string best = row.best_ms ? fmt::format("{:.4f}", *row.best_ms) : "-";
  const std::string speedup =
      row.speedup ? fmt::format("{:.2f}x ({})", *row.speedup,
                                interval(row.speedup_low, row.speedup_high, "{:.2f}-{:.2f}"))
                  : "-";
  const auto number = [](const std::optional<double>& value, const char* format) {
    return value ? fmt::format(fmt::runtime(format), *value) : std::string("-");
  };
  std::cout << fmt::format(
                   "{:<22} {:<26} {:>4} {:>10} {:>21} {:>22} {:>7.0f} {:>5} {:>9}  {}{}{}\n",
                   row.problem, row.configuration, row.seed, best,
                   interval(row.ci_low_ms, row.ci_high_ms, "{:.4f}-{:.4f}"), speedup, row.wall_s,
                   number(row.mean_depth, "{:.2f}"), number(row.improving_share, "{:.2f}"),
                   row.winner.empty() ? "-" : row.winner,
                   slower_than_baseline(row) ? " (slower than the baseline)" : "",
                   stored ? " (stored)" : "")
            << std::flush;
}

SearchSetupOptions setup_options(const Flags& flags) {
  SearchSetupOptions options;
  options.device = flags.device;
  return options;
}

/// What the runs of one problem share: its search setup and evaluations. Set up only when a
/// row of the problem is missing.
struct ProblemRuns {
  ProblemRuns(const std::string& dir, const Flags& flags, Guard& guard)
      : setup(dir, setup_options(flags)),
        workloads(flags.all_workloads ? setup.problem().workloads
                                      : std::vector{largest_workload(setup.problem().workloads)}),
        target(setup.target(workloads)),
        measured(guard, guard, setup.problem(), workloads, flags.device),
        shared(measured) {}

  SearchSetup setup;
  std::vector<Workload> workloads;
  OptimizeTarget target;
  GuardEvaluator measured;
  SharedEvaluations shared;
};

BenchRow run_config(ProblemRuns& runs, Workspace& workspace, const Flags& flags,
                    const Config& config, int seed) {
  const SearchSetup& setup = runs.setup;
  const OptimizeTarget& target = runs.target;
  OptimizeOptions options;
  options.budget = flags.budget;
  options.agents = parse_agent_list(config.agents);
  options.policy = config.policy;
  options.seed = static_cast<uint64_t>(seed);
  options.build_ahead = backend_for(flags.device).builds_ahead() ? 2 : 0;
  options.final_candidates = 2;
  options.final_rounds = 2;
  RecordingProgress progress;
  const auto started = std::chrono::steady_clock::now();
  Orchestrator orchestrator(target, runs.shared, workspace, options, progress);
  const OptimizeSummary summary = orchestrator.run();
  BenchRow row;
  row.problem = setup.problem().definition.name;
  row.configuration = config.name;
  row.seed = seed;
  row.wall_s = seconds_since(started);
  if (!summary.finalists.empty()) {
    const Finalist& winner = summary.finalists.front();
    const auto& time = winner.measurement.times.at(target.largest_workload);
    row.best_ms = time.median_ms;
    row.ci_low_ms = time.ci_low_ms;
    row.ci_high_ms = time.ci_high_ms;
    row.winner = fmt::format("{}: {}", winner.agent, winner.label);
  }
  row.mean_depth = summary.tree_shape.mean_depth;
  row.improving_share = summary.tree_shape.improving_share();
  if (summary.speedup) {
    row.speedup = summary.speedup->value;
    row.speedup_low = summary.speedup->low;
    row.speedup_high = summary.speedup->high;
  }
  return row;
}

/// Each configuration against the single agent on the same problem and seed: the ratio of the
/// best times (above 1: this configuration found faster) and whether the intervals separate.
void print_summary(const BenchRows& rows) {
  const std::string& single = kConfigs.front().name;
  std::cout << fmt::format(
      "\nagainst {} (same problem and seed): geomean of its best / this "
      "configuration's best; faster or slower = the 95% intervals do not "
      "overlap\n",
      single);
  std::cout << fmt::format("{:<26} {:>8} {:>8} {:>7} {:>5} {:>7}\n", "configuration", "pairs",
                           "geomean", "faster", "tie", "slower");
  for (const Config& config : kConfigs) {
    if (config.name == single) continue;
    int pairs = 0, faster = 0, slower = 0;
    double log_sum = 0;
    for (const BenchRow& row : rows.rows()) {
      if (row.configuration != config.name || !row.best_ms) continue;
      const BenchRow* base = rows.find(row.problem_dir, single, row.seed);
      if (!base || !base->best_ms) continue;
      ++pairs;
      log_sum += std::log(*base->best_ms / *row.best_ms);
      if (*row.ci_high_ms < *base->ci_low_ms) ++faster;
      if (*row.ci_low_ms > *base->ci_high_ms) ++slower;
    }
    if (pairs == 0) continue;
    std::cout << fmt::format("{:<26} {:>8} {:>7.3f}x {:>7} {:>5} {:>7}\n", config.name, pairs,
                             std::exp(log_sum / pairs), faster, pairs - faster - slower, slower);
  }
}

/// Per configuration (so per policy), over its rows: the mean tree depth and the share of
/// children that improved on their parent.
void print_tree_shapes(const BenchRows& rows) {
  std::cout << "\nsearch trees per configuration (mean over its runs): depth = mean node depth, a "
               "root at 0; improving = share of children faster than their parent\n";
  std::cout << fmt::format("{:<26} {:>5} {:>6} {:>10}\n", "configuration", "runs", "depth",
                           "improving");
  for (const Config& config : kConfigs) {
    int runs = 0;
    double depth = 0, improving = 0;
    for (const BenchRow& row : rows.rows()) {
      if (row.configuration != config.name || !row.mean_depth || !row.improving_share) continue;
      ++runs;
      depth += *row.mean_depth;
      improving += *row.improving_share;
    }
    if (runs == 0) continue;
    std::cout << fmt::format("{:<26} {:>5} {:>6.2f} {:>10.2f}\n", config.name, runs, depth / runs,
                             improving / runs);
  }
}

int run(const Flags& flags) {
  const std::filesystem::path results =
      flags.results.empty() ? std::filesystem::path(flags.workspace) / "optimize_bench.jsonl"
                            : std::filesystem::path(flags.results);
  BenchRows rows(results, {{"device", flags.device},
                           {"budget", flags.budget},
                           {"trials", flags.trials},
                           {"iterations", flags.iterations},
                           {"all_workloads", flags.all_workloads},
                           // 2: the policies deepen (search/deepening.h); older rows are flatter.
                           {"search", 2}});
  std::optional<BenchGuard> bench_guard;  // started only when a row is missing
  Workspace workspace(flags.workspace);

  std::cout << fmt::format(
      "optimize_bench on {}: budget {} candidates per run, {} seed(s), guard {} trial(s) x {} "
      "timed runs; a point measured in one configuration is not measured again in another; "
      "best = the winner's median at the largest workload from its run's final side-by-side "
      "re-measurement (95% CI); speedup over the bundled baseline (interval); rows kept in {}\n",
      flags.device, flags.budget, flags.seeds, flags.trials, flags.iterations, results.string());
  std::cout << fmt::format("{:<22} {:<26} {:>4} {:>10} {:>21} {:>22} {:>7} {:>5} {:>9}  {}\n",
                           "problem", "configuration", "seed", "best_ms", "ci95_ms", "speedup",
                           "wall_s", "depth", "improving", "winner (agent: candidate)");
  for (const std::string& dir : flags.problem_dirs()) {
    const std::string dir_name = problem_dir_name(dir);
    std::optional<ProblemRuns> runs;
    for (const Config& config : kConfigs) {
      for (int seed = 1; seed <= flags.seeds; ++seed) {
        if (const BenchRow* stored = rows.find(dir_name, config.name, seed)) {
          print_row(*stored, true);
          continue;
        }
        if (!bench_guard) bench_guard.emplace(flags.guard_options());
        if (!runs) runs.emplace(dir, flags, bench_guard->guard());
        BenchRow row = run_config(*runs, workspace, flags, config, seed);
        row.problem_dir = dir_name;
        rows.add(row);
        print_row(row, false);
      }
    }
    if (runs) {
      std::cout << fmt::format("# {}: {} search evaluations, {} measured, the rest shared\n",
                               runs->setup.problem().definition.name, runs->shared.evaluations(),
                               runs->shared.measured());
    }
  }
  print_summary(rows);
  print_tree_shapes(rows);
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
  app.add_option("--results", flags.results,
                 "rows file: finished rows are kept there and not run again "
                 "(default: <workspace>/optimize_bench.jsonl)");
  return kernelarc::run_bench(app, argc, argv, [&] { return kernelarc::run(flags); });
}

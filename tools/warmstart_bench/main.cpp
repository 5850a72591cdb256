// warmstart_bench: does starting from skills make a search faster? For every problem: a cold
// run (seed A) whose board conclusions and winner route are recorded as skills; a warm run
// (seed B) started from those skills; and a cold control run with the same seed B. Printed per
// problem: the cold run's best time at the largest workload and after how many candidates it
// first came within the tolerance of it, and after how many candidates the warm run and the
// control first came within the tolerance of the cold run's best ("-" = never within the
// budget). Every run goes through the guard; nothing here is a test.
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "backend/backend.h"
#include "bench_support.h"
#include "core/error.h"
#include "kb/knowledge_base.h"
#include "optimize/search_setup.h"
#include "optimize/skill_distill.h"
#include "optimize/strategy.h"

namespace kernelarc {
namespace {

struct Flags : BenchFlags {
  double tolerance = 0.03;
};

struct RunResult {
  std::vector<double> times_ms;  ///< per candidate at the largest workload (inf when failed)
  OptimizeSummary summary;
};

RunResult optimize_once(const OptimizeTarget& target, CandidateEvaluator& evaluator,
                        Workspace& workspace, int64_t budget, uint64_t seed,
                        const std::string& device) {
  OptimizeOptions options;
  options.budget = budget;
  options.agents = parse_agent_list("6");
  options.seed = seed;
  options.build_ahead = backend_for(device).builds_ahead() ? 2 : 0;
  options.final_candidates = 2;
  options.final_rounds = 2;
  RecordingProgress progress;
  Orchestrator orchestrator(target, evaluator, workspace, options, progress);
  RunResult result{{}, orchestrator.run()};
  for (const CandidateEvent& event : progress.events) {
    if (event.label.starts_with("baseline")) continue;
    const auto time = event.measurement.times.find(target.largest_workload);
    result.times_ms.push_back(event.measurement.passed && time != event.measurement.times.end()
                                  ? time->second.median_ms
                                  : INFINITY);
  }
  return result;
}

/// 1-based index of the first candidate within the tolerance of `target_ms`.
std::optional<std::size_t> candidates_to_reach(const std::vector<double>& times_ms,
                                               double target_ms, double tolerance) {
  for (std::size_t i = 0; i < times_ms.size(); ++i)
    if (times_ms[i] <= target_ms * (1 + tolerance)) return i + 1;
  return std::nullopt;
}

std::string count_text(const std::optional<std::size_t>& count) {
  return count ? std::to_string(*count) : "-";
}

int run(const Flags& flags) {
  BenchGuard bench_guard(flags.guard_options());
  std::filesystem::remove(knowledge_file(flags.workspace));
  Workspace workspace(flags.workspace);
  std::cout << fmt::format(
      "warmstart_bench on {}: budget {} candidates per run, 6 agents, mcts; times at the "
      "largest workload; 'reached' = first candidate within {:.0f}% of the cold run's best\n",
      flags.device, flags.budget, flags.tolerance * 100);
  std::cout << fmt::format("{:<24} {:>12} {:>12} {:>7} {:>13} {:>13} {:>7}\n", "problem",
                           "cold_best_ms", "cold_reached", "skills", "warm_reached",
                           "control_reached", "ratio");
  for (const std::string& dir : flags.problem_dirs()) {
    SearchSetupOptions setup_options;
    setup_options.device = flags.device;
    const SearchSetup setup(dir, setup_options);
    const std::vector<Workload> workloads = {largest_workload(setup.problem().workloads)};
    OptimizeTarget target = setup.target(workloads);
    GuardEvaluator evaluator(bench_guard.guard(), bench_guard.guard(), setup.problem(), workloads,
                             flags.device);
    const SkillCondition condition{setup.problem().definition.ext.op_family,
                                   setup.problem().definition.name + ": largest workload",
                                   flags.device, setup.problem().definition.name};

    const RunResult cold =
        optimize_once(target, evaluator, workspace, flags.budget, 1, flags.device);
    double cold_best = INFINITY;
    for (double time : cold.times_ms) cold_best = std::min(cold_best, time);
    KnowledgeBase knowledge(knowledge_file(flags.workspace));
    KnowledgeBaseMirror mirror(knowledge);
    SkillStore store(knowledge_file(flags.workspace), &mirror);
    for (const SkillObservation& observation : skill_observations(cold.summary, condition))
      store.record(observation);
    std::vector<std::string> templates;
    for (const BoundTemplate* bound : target.templates) templates.push_back(bound->kernel().name);
    const std::vector<SkillHint> hints = skill_hints(store, condition, templates);

    const RunResult control =
        optimize_once(target, evaluator, workspace, flags.budget, 2, flags.device);
    const auto cold_reached = candidates_to_reach(cold.times_ms, cold_best, flags.tolerance);
    const auto control_reached = candidates_to_reach(control.times_ms, cold_best, flags.tolerance);
    // Without skills a warm run would be the control run again: nothing to compare.
    std::string warm_text = "no skills", ratio = "-";
    if (!hints.empty()) {
      target.skill_hints = hints;
      const RunResult warm =
          optimize_once(target, evaluator, workspace, flags.budget, 2, flags.device);
      const auto warm_reached = candidates_to_reach(warm.times_ms, cold_best, flags.tolerance);
      warm_text = count_text(warm_reached);
      if (warm_reached && cold_reached)
        ratio = fmt::format(
            "{:.2f}", static_cast<double>(*warm_reached) / static_cast<double>(*cold_reached));
    }
    std::cout << fmt::format("{:<24} {:>12.4f} {:>12} {:>7} {:>13} {:>13} {:>7}\n",
                             setup.problem().definition.name, cold_best, count_text(cold_reached),
                             hints.size(), warm_text, count_text(control_reached), ratio)
              << std::flush;
  }
  return 0;
}

}  // namespace
}  // namespace kernelarc

int main(int argc, char** argv) {
  CLI::App app{"candidates a warm-started kernelarc optimize run needs to reach a cold run's best"};
  kernelarc::Flags flags;
  flags.workspace = ".kernelarc-warmstart";
  kernelarc::add_bench_flags(app, flags);
  app.add_option("--tolerance", flags.tolerance, "relative slack for 'reached the cold best'")
      ->capture_default_str();
  return kernelarc::run_bench(app, argc, argv, [&] { return kernelarc::run(flags); });
}

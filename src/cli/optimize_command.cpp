// `kernelarc optimize <problem-dir>`: the multi-agent search over the template library, through
// the guard, stored in the workspace (resumable), ending with a side-by-side re-measurement of
// the best candidates and the bundled baseline; writes the winner as solution.json + sources.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "app/finals_table.h"
#include "app/optimize_session.h"
#include "app/optimize_skills.h"
#include "app/report_file.h"
#include "app/run_outputs.h"
#include "app/table.h"
#include "backend/backend.h"
#include "cli/code_synth_flags.h"
#include "cli/commands.h"
#include "cli/guard_flags.h"
#include "cli/interrupt.h"
#include "cli/optimize_progress.h"
#include "cli/profile_flags.h"
#include "core/error.h"
#include "diagnosis/diagnosis.h"
#include "distributed/redis_evaluation_pool.h"
#include "eval/speed_of_light.h"

namespace kernelarc {

namespace {

/// The run --resume names, or the newest unfinished (running or stopped) run of this problem.
Run run_to_resume(Database& db, const std::string& text, const std::string& problem) {
  if (text != "latest") {
    int64_t id = 0;
    try {
      std::size_t used = 0;
      id = std::stoll(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
    } catch (const std::logic_error&) {
      throw InputError(fmt::format("--resume: expected a run id or \"latest\", got \"{}\"", text));
    }
    const auto run = db.find_run(id);
    if (!run) throw InputError(fmt::format("--resume: the workspace has no run {}", id));
    return *run;
  }
  const auto runs = db.list_runs();
  for (auto run = runs.rbegin(); run != runs.rend(); ++run)
    if (run->problem_name == problem &&
        (run->status == RunStatus::Running || run->status == RunStatus::Stopped))
      return *run;
  throw InputError(fmt::format("--resume: no unfinished run of {} in the workspace", problem));
}

std::string ms(const std::optional<double>& value) {
  return value ? fmt::format("{:.4f}", *value) : "-";
}

/// Keeps the profile records profile_best_trace attached to the finalist's traces in the store,
/// where `kernelarc show` finds them.
void store_profiles(Database& db, const Finalist& finalist) {
  for (const Trace& trace : finalist.traces)
    if (trace.extra.is_object() && trace.extra.contains("profile"))
      db.record_profile({finalist.candidate_id, trace.workload.value("uuid", std::string()),
                         trace.extra.at("profile"), ""});
}

void print_summary(const OptimizeSummary& summary, const Problem& problem, std::ostream& out) {
  out << fmt::format("\nrun {} stopped ({}): {} candidates evaluated, {} passed\n", summary.run_id,
                     summary.stop_reason, summary.evaluated, summary.passed);
  if (summary.measured > 0)
    out << fmt::format(
        "search: {} candidates measured in {:.1f} s on {} evaluator(s) at once, "
        "{:.2f} candidates/s\n",
        summary.measured, summary.search_seconds, summary.evaluators,
        summary.measured / std::max(summary.search_seconds, 1e-9));
  if (summary.synthesis.calls > 0) out << synthesis_text(summary.synthesis) << '\n';
  if (summary.finalists.empty()) {
    out << "no candidate passed the guard\n";
    return;
  }
  print_finals(summary, out);

  const Finalist& winner = summary.finalists.front();
  TextTable table({"workload", "baseline_ms", "best_ms", "ci95_ms", "eager_ms", "compiled_ms",
                   "sol_ms", "sol_score"});
  bool bound_beaten = false;
  for (const Workload& workload : problem.workloads) {
    const auto time = winner.measurement.times.find(workload.uuid);
    if (time == winner.measurement.times.end()) continue;
    const WorkloadTime& t = time->second;
    std::optional<double> baseline_ms;
    if (summary.baseline)
      if (const auto b = summary.baseline->measurement.times.find(workload.uuid);
          b != summary.baseline->measurement.times.end())
        baseline_ms = b->second.median_ms;
    std::optional<double> torch_ms;
    if (t.eager_ms || t.compiled_ms)
      torch_ms = std::min(t.eager_ms.value_or(INFINITY), t.compiled_ms.value_or(INFINITY));
    std::string score = "-";
    if (torch_ms && t.sol_ms && *torch_ms > *t.sol_ms)
      score = fmt::format("{:.3f}", sol_score(t.median_ms, *torch_ms, *t.sol_ms));
    if (sol_bound_beaten(t.median_ms, t.sol_ms)) {
      score += " (bound beaten)";
      bound_beaten = true;
    }
    table.add_row({format_axes(workload.axes), ms(baseline_ms), fmt::format("{:.4f}", t.median_ms),
                   fmt::format("{:.4f}-{:.4f}", t.ci_low_ms, t.ci_high_ms), ms(t.eager_ms),
                   ms(t.compiled_ms), ms(t.sol_ms), score});
  }
  out << fmt::format("winner: candidate {} ({}, found by {})\n", winner.candidate_id, winner.label,
                     winner.agent);
  if (const auto trades = solution_accuracy_trades(winner.solution); !trades.empty())
    out << fmt::format(
        "the winner trades accuracy the reference keeps, so its speed is not like for like: {} "
        "(--keep-accuracy searches without such values)\n",
        fmt::join(trades, "; "));
  table.print(out);
  if (bound_beaten) out << "the winner is " << kSolBoundBeatenAdvice << '\n';
  const std::string largest_uuid = largest_workload(problem.workloads).uuid;
  for (const Trace& trace : winner.traces) {
    const auto diagnosis = trace_diagnosis_text(trace);
    if (diagnosis && trace.workload.value("uuid", std::string()) == largest_uuid)
      out << "diagnosis at the largest workload: " << *diagnosis << '\n';
  }
  if (summary.speedup)
    out << fmt::format("speedup over the baseline: {:.2f}x ({:.2f}-{:.2f})\n",
                       summary.speedup->value, summary.speedup->low, summary.speedup->high);
  std::vector<std::string> steps;
  for (const LineageStep& step : summary.lineage) steps.push_back(lineage_step_text(step));
  out << fmt::format("lineage: {}\n", fmt::join(steps, " -> "));
}

/// `report` set: --report was given, with a path or none (the run's directory).
int run_optimize(OptimizeFlags flags, bool resume_given, const std::optional<std::string>& report) {
  // From here on guard.device is one device, the run's; the session measures on all of them.
  flags.devices = flags.guard.device;
  flags.guard.device = search_devices(flags.devices, flags.cpu_workers).front().device;
  if (!flags.backend.empty()) {
    const std::optional<DeviceKind> wanted = device_kind_from_name(flags.backend);
    if (!wanted) throw InputError(fmt::format("--backend {}: expected cpu or cuda", flags.backend));
    // --backend cuda with the default device means the first GPU.
    if (backend_for(flags.guard.device).kind() == DeviceKind::Cpu && *wanted == DeviceKind::Cuda)
      flags.guard.device = "cuda:0";
    if (backend_for(flags.guard.device).kind() != *wanted)
      throw InputError(
          fmt::format("--backend {} and --device {} disagree", flags.backend, flags.guard.device));
  }
  Workspace workspace(flags.guard.workspace);
  std::optional<Run> resumed;
  if (resume_given) {
    const Problem problem = load_problem(flags.problem_dir);
    resumed = run_to_resume(workspace.database(), flags.resume, problem.definition.name);
  }
  OptimizeSession session(flags, resumed ? &*resumed : nullptr);

  const bool terminal = !flags.plain && isatty(STDOUT_FILENO);
  auto progress = make_progress(std::cout, terminal);
  std::cout << session.description() << '\n';
  OptimizeSummary summary = [&] {
    const StopOnInterrupt stop;
    return session.run(workspace, *progress,
                       resumed ? std::optional<int64_t>(resumed->id) : std::nullopt, &stop.flag());
  }();
  if (summary.interrupted_by != 0) {
    const std::string workspace_flag = flags.guard.workspace == GuardFlags{}.workspace
                                           ? ""
                                           : " --workspace " + flags.guard.workspace;
    std::cout << fmt::format(
        "\nrun {} stopped ({}): {} candidates evaluated, {} passed; no final re-measurement. "
        "`kernelarc optimize {} --resume {}{}` continues it\n",
        summary.run_id, summary.stop_reason, summary.evaluated, summary.passed, flags.problem_dir,
        summary.run_id, workspace_flag);
    return 128 + summary.interrupted_by;  // as a shell reports a process the signal ended
  }
  print_summary(summary, session.problem(), std::cout);
  if (flags.profile.enabled) {
    // After the final re-measurement, so that the profiler's replays disturb no timing.
    const std::size_t count =
        std::min(summary.finalists.size(), static_cast<std::size_t>(flags.profile.top));
    for (std::size_t i = 0; i < count; ++i) {
      Finalist& finalist = summary.finalists[i];
      std::cout << profile_best_trace(flags.profile, session.final_guard(), session.problem(),
                                      finalist.solution, finalist.traces)
                << '\n';
      store_profiles(workspace.database(), finalist);
    }
  }
  if (!flags.no_skills)
    record_run_skills(flags.guard.workspace, summary, session.condition(), std::cout);
  if (!summary.finalists.empty()) {
    const std::filesystem::path out =
        flags.out.empty() ? workspace.root() / "runs" / std::to_string(summary.run_id)
                          : std::filesystem::path(flags.out);
    if (summary.kept_baseline)
      std::cout << fmt::format(
          "no candidate beat the baseline: the best, candidate {}, runs at {:.2f}x "
          "({:.2f}-{:.2f}); the baseline stays the best solution\n",
          summary.finalists.front().candidate_id, summary.speedup->value, summary.speedup->low,
          summary.speedup->high);
    write_run_outputs(out, summary.best(), summary_to_json(summary));
    std::cout << fmt::format("best solution written to {}\n", (out / "solution.json").string());
  }
  if (report)
    std::cout << fmt::format("report written to {}\n",
                             write_run_report(workspace, summary.run_id, *report).string());
  return summary.finalists.empty() ? 1 : 0;
}

}  // namespace

CommandRunner add_optimize_command(CLI::App& app) {
  auto flags = std::make_shared<OptimizeFlags>();
  auto* cmd = app.add_subcommand(
      "optimize", "search for a faster solution of a problem with agents over the templates");
  cmd->add_option("problem", flags->problem_dir, "problem directory")->required();
  cmd->add_option("--budget", flags->budget, "candidates to evaluate")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000}));
  cmd->add_option("--agents", flags->agents,
                  "a count (1-6) or a list of strategies: explore, memory, parallelism, compute, "
                  "library, fusion")
      ->capture_default_str();
  cmd->add_option("--policy", flags->policy, "random, beam, mcts or islands")
      ->capture_default_str();
  cmd->add_option("--seed", flags->seed, "search seed")->capture_default_str();
  cmd->add_option("--backend", flags->backend, "cpu or cuda (cuda = --device cuda:0)");
  cmd->add_option("--synth", flags->synth,
                  "template, llm, command, template+llm or template+command")
      ->capture_default_str();
  add_code_synth_flags(*cmd, flags->code);
  auto* resume = cmd->add_option("--resume", flags->resume,
                                 "continue a run (its id; no value: the newest unfinished run of "
                                 "this problem)")
                     ->expected(0, 1)
                     ->default_str("latest");
  cmd->add_option("--plateau", flags->plateau, "flat results before an agent drafts a new start")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--build-ahead", flags->build_ahead,
                  "candidates compiled ahead (default: 0 on the CPU; on a GPU half the host's "
                  "cores, 2 to 8)");
  cmd->add_option("--final-top", flags->final_candidates,
                  "best candidates re-measured side by side at the end")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--final-rounds", flags->final_rounds, "interleaved rounds of that")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--search-trials", flags->search_trials,
                  "correctness draws per workload while searching (at most --trials); the "
                  "finalists' re-measurement runs all --trials")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--no-skills", flags->no_skills,
                "neither start from the skills of earlier runs nor record this run's");
  cmd->add_flag("--keep-accuracy", flags->keep_accuracy,
                "search no knob value that gives up accuracy the reference keeps (fast FP8 "
                "accumulation), so that the winner's speed is like for like");
  cmd->add_option("--wall-time", flags->wall_time_s, "stop proposing after this many seconds");
  cmd->add_option("--out", flags->out, "where the winner goes (default WORKSPACE/runs/ID)");
  cmd->add_option("--baseline,--parent", flags->baseline,
                  "solution speedups are measured against and that code drafts start from "
                  "(default solutions/naive or solutions/basic; \"none\"); a kernelarc, "
                  "SOL-ExecBench or FlashInfer-Bench solution (a `binding: torch` extension too)");
  cmd->add_option("--templates", flags->root, "template library root");
  cmd->add_option("--file", flags->files, "NAME=PATH added to every instantiated solution");
  cmd->add_flag("--plain", flags->plain, "line output even on a terminal");
  add_guard_flags(*cmd, flags->guard);
  cmd->get_option("--device")
      ->description(
          "cpu or cuda:N; several GPUs measure candidates at once: cuda:N,M,... or cuda:all "
          "(the first measures the baseline and the finalists)");
  cmd->add_option("--cpu-workers", flags->cpu_workers,
                  "with --device cpu: candidates measured at once, each worker on its own share "
                  "of the cores (the finalists on all of them)")
      ->capture_default_str();
  auto redis = std::make_shared<RedisPoolOptions>();
  cmd->add_option("--redis", redis->url,
                  "measure on `kernelarc worker --redis` processes of any host too, through "
                  "this Redis server: redis://host[:port][/db] (README, \"Across hosts\")");
  cmd->add_option("--queue", redis->queue, "with --redis: the queue's name (the workers' --queue)")
      ->capture_default_str();
  cmd->add_option("--redis-jobs", redis->remote_jobs,
                  "with --redis: jobs on the queue at once (default: one per worker of the run's "
                  "device kind seen in the last ten minutes)");
  add_profile_flags(*cmd, flags->profile, /*with_top=*/true);
  auto report_path = std::make_shared<std::string>();
  auto* report = cmd->add_option("--report", *report_path,
                                 "write the run's HTML report at the end (default "
                                 "WORKSPACE/runs/ID/report.html)")
                     ->expected(0, 1);
  return [flags, resume, redis, report, report_path] {
    if (!redis->url.empty()) flags->remote_pool = redis_pool_factory(*redis);
    return run_optimize(
        *flags, resume->count() > 0,
        report->count() > 0 ? std::optional<std::string>(*report_path) : std::nullopt);
  };
}

}  // namespace kernelarc

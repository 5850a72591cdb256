#include "python_module/library_calls.h"

#include <iostream>
#include <sstream>

#include "app/optimize_skills.h"
#include "app/recognize.h"
#include "app/run_outputs.h"
#include "app/search_devices.h"
#include "app/solution_export.h"
#include "cli/optimize_progress.h"
#include "store/workspace.h"

namespace kernelarc {

namespace {

/// Per workload of the problem the winner was measured on: axes, times and the speedup over the
/// baseline (when the run had one).
nlohmann::json workload_results(const OptimizeSummary& summary, const Problem& problem) {
  nlohmann::json rows = nlohmann::json::array();
  const Finalist& best = summary.best();
  for (const Workload& workload : problem.workloads) {
    const auto time = best.measurement.times.find(workload.uuid);
    if (time == best.measurement.times.end()) continue;
    nlohmann::json row = {
        {"uuid", workload.uuid}, {"axes", workload.axes},  {"best_ms", time->second.median_ms},
        {"eager_ms", nullptr},   {"compiled_ms", nullptr}, {"baseline_ms", nullptr},
        {"speedup", nullptr}};
    if (time->second.eager_ms) row["eager_ms"] = *time->second.eager_ms;
    if (time->second.compiled_ms) row["compiled_ms"] = *time->second.compiled_ms;
    if (summary.baseline) {
      const auto& times = summary.baseline->measurement.times;
      if (const auto base = times.find(workload.uuid); base != times.end()) {
        row["baseline_ms"] = base->second.median_ms;
        row["speedup"] = base->second.median_ms / time->second.median_ms;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

nlohmann::json optimize_problem(OptimizeFlags flags) {
  // As `kernelarc optimize` does: guard.device becomes the run's device, the first of them.
  flags.devices = flags.guard.device;
  flags.guard.device = search_devices(flags.devices, flags.cpu_workers).front().device;
  Workspace workspace(flags.guard.workspace);
  OptimizeSession session(flags, nullptr);
  auto progress = make_progress(std::cout, /*terminal=*/false);
  std::cout << session.description() << std::endl;
  const OptimizeSummary summary = session.run(workspace, *progress, std::nullopt);
  if (!flags.no_skills)
    record_run_skills(flags.guard.workspace, summary, session.condition(), std::cout);
  std::cout.flush();

  nlohmann::json result = summary_to_json(summary);
  result["run_id"] = summary.run_id;
  result["problem"] = session.problem().definition.name;
  result["device"] = flags.guard.device;
  result["winner"] = nullptr;
  result["solution_dir"] = nullptr;
  result["workloads"] = nlohmann::json::array();
  if (summary.finalists.empty()) return result;
  const Finalist& best = summary.best();
  const std::filesystem::path out = flags.out.empty()
                                        ? workspace.root() / "runs" / std::to_string(summary.run_id)
                                        : std::filesystem::path(flags.out);
  write_run_outputs(out, best, summary_to_json(summary));
  result["winner"] = {{"candidate", best.candidate_id},
                      {"label", best.label},
                      {"agent", best.agent},
                      {"solution", best.solution.name}};
  result["solution_dir"] = out.string();
  result["workloads"] = workload_results(summary, session.problem());
  return result;
}

OrderedJson evaluate_solution(const std::string& problem_dir, const std::string& solution_path,
                              const GuardFlags& flags, bool report) {
  // Recognized for the speed-of-light bound's bytes and FLOPs, as `kernelarc eval` does.
  const Problem problem =
      load_recognized_problem(problem_dir,
                              recognize_options(flags.workspace, flags.python, flags.device))
          .problem;
  const Solution solution = load_solution(solution_path);
  GuardSession session(flags);
  OrderedJson traces = OrderedJson::array();
  std::ostringstream discarded;
  session.evaluate_and_report(problem, solution, report ? std::cout : discarded,
                              [&](std::vector<Trace>& annotated) {
                                for (const Trace& trace : annotated)
                                  traces.push_back(trace_to_json(trace));
                              });
  std::cout.flush();
  return traces;
}

nlohmann::json list_runs(const std::string& workspace_dir) {
  Workspace workspace(workspace_dir);
  Database& db = workspace.database();
  nlohmann::json rows = nlohmann::json::array();
  for (const Run& run : db.list_runs()) {
    const Budget budget = db.budget_of(run.id);
    const auto summary = db.load_agent_state(run.id, "orchestrator");
    nlohmann::json row = {
        {"id", run.id},
        {"created", run.created_at},
        {"problem", run.problem_name},
        {"device", run.device},
        {"status", std::string(shown_run_status(run))},
        {"evaluated", budget.used},
        {"budget", budget.total},
        {"finished", run.finished_at ? nlohmann::json(*run.finished_at) : nullptr},
        {"speedup", nullptr}};
    if (summary && summary->contains("speedup")) row["speedup"] = (*summary)["speedup"];
    rows.push_back(std::move(row));
  }
  return rows;
}

OrderedJson export_torch_json(const LoadedTarget& loaded, bool value_returning,
                              const std::string& name) {
  ExportOptions options;
  options.destination_passing_style = !value_returning;
  options.name = name;
  return solution_to_json(export_torch_solution(loaded.solution, loaded.definition, options));
}

}  // namespace kernelarc

#include "optimize/orchestrator.h"

#include <string_view>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "optimize/conclusions.h"
#include "optimize/optimize_run.h"
#include "optimize/serial_pool.h"

namespace kernelarc {

std::string problem_hash(const Problem& problem) {
  const Definition& definition = problem.definition;
  return content_hash(definition.raw.dump() + '\n' + definition.ext.op_family + '\n' +
                      definition.ext.op_params.dump());
}

nlohmann::json OptimizeOptions::to_json() const {
  nlohmann::json json = {{"budget", budget},
                         {"agents", agents},
                         {"policy", policy},
                         {"seed", seed},
                         {"plateau", plateau},
                         {"build_ahead", build_ahead},
                         {"in_flight", in_flight},
                         {"min_gain", min_gain},
                         {"final_candidates", final_candidates},
                         {"final_rounds", final_rounds}};
  if (wall_time_s) json["wall_time_s"] = *wall_time_s;
  json["code_share"] = code_share;
  json["repair_rounds"] = repair_rounds;
  if (max_synthesis_tokens) json["max_synthesis_tokens"] = *max_synthesis_tokens;
  if (max_synthesis_cost_usd) json["max_synthesis_cost_usd"] = *max_synthesis_cost_usd;
  json["synthesis_parallel"] = synthesis_parallel;
  return json;
}

OptimizeOptions OptimizeOptions::from_json(const nlohmann::json& json, const std::string& where) {
  OptimizeOptions options;
  const char* field = "";
  try {
    field = "budget", options.budget = json.at(field).get<int64_t>();
    field = "agents", options.agents = json.at(field).get<std::vector<std::string>>();
    field = "policy", options.policy = json.at(field).get<std::string>();
    field = "seed", options.seed = json.at(field).get<uint64_t>();
    field = "plateau", options.plateau = json.at(field).get<int>();
    field = "build_ahead", options.build_ahead = json.at(field).get<int>();
    // Runs stored before evaluation pools measured one candidate at a time.
    field = "in_flight", options.in_flight = json.value(field, options.in_flight);
    field = "min_gain", options.min_gain = json.at(field).get<double>();
    field = "final_candidates", options.final_candidates = json.at(field).get<int>();
    field = "final_rounds", options.final_rounds = json.at(field).get<int>();
    field = "wall_time_s";
    if (json.contains(field)) options.wall_time_s = json.at(field).get<double>();
    // Runs stored before code synthesizers existed lack these: the defaults hold.
    field = "code_share", options.code_share = json.value(field, options.code_share);
    field = "repair_rounds", options.repair_rounds = json.value(field, options.repair_rounds);
    field = "max_synthesis_tokens";
    if (json.contains(field)) options.max_synthesis_tokens = json.at(field).get<int64_t>();
    field = "max_synthesis_cost_usd";
    if (json.contains(field)) options.max_synthesis_cost_usd = json.at(field).get<double>();
    // Runs stored before requests ran concurrently asked one at a time.
    field = "synthesis_parallel", options.synthesis_parallel = json.value(field, 1);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("{}: field \"{}\": {}", where, field, error.what()));
  }
  return options;
}

OptimizeOptions stored_options(const Run& run) {
  return OptimizeOptions::from_json(run.config.value("options", nlohmann::json::object()),
                                    fmt::format("run {} config", run.id));
}

Orchestrator::Orchestrator(OptimizeTarget target, CandidateEvaluator& evaluator,
                           Workspace& workspace, OptimizeOptions options, ProgressSink& progress)
    : target_(std::move(target)),
      evaluator_(&evaluator),
      own_pool_(std::make_unique<SerialPool>(evaluator)),
      pool_(own_pool_.get()),
      workspace_(&workspace),
      options_(std::move(options)),
      progress_(&progress) {
  check_options();
}

Orchestrator::Orchestrator(OptimizeTarget target, CandidateEvaluator& evaluator,
                           EvaluationPool& pool, Workspace& workspace, OptimizeOptions options,
                           ProgressSink& progress)
    : target_(std::move(target)),
      evaluator_(&evaluator),
      pool_(&pool),
      workspace_(&workspace),
      options_(std::move(options)),
      progress_(&progress) {
  check_options();
}

void Orchestrator::check_options() const {
  if (options_.budget < 1) throw InputError("--budget: expected at least 1 candidate");
  if (options_.plateau < 1) throw InputError("--plateau: expected at least 1");
  if (options_.build_ahead < 0) throw InputError("--build-ahead: expected 0 or more");
  if (options_.in_flight < 1) throw InputError("in_flight: expected at least 1 evaluation");
  if (options_.final_rounds < 1) throw InputError("--final-rounds: expected at least 1");
  if (options_.code_share < 0 || options_.code_share > 1)
    throw InputError("--code-share: expected a value from 0 to 1");
  if (options_.repair_rounds < 0) throw InputError("--repair-rounds: expected 0 or more");
  if (options_.synthesis_parallel < 1)
    throw InputError("--synthesis-parallel: expected at least 1 request");
  if (target_.templates.empty() && !target_.code_synthesizer)
    throw InputError(fmt::format("problem {}: no template serves it on {}",
                                 target_.problem->definition.name, target_.device));
}

Orchestrator::~Orchestrator() = default;

OptimizeSummary Orchestrator::run() {
  NewRun run;
  run.problem_name = target_.problem->definition.name;
  run.problem_hash = problem_hash(*target_.problem);
  run.device = target_.device;
  run.seed = options_.seed;
  run.config = target_.run_config;
  run.config.update({{"options", options_.to_json()},
                     {"problem_dir", target_.problem->dir.string()},
                     {"workload_class", target_.workload_class}});
  run.budget_total = options_.budget + (target_.baseline ? 1 : 0);
  return execute(workspace_->database().create_run(run));
}

OptimizeSummary Orchestrator::resume(int64_t run_id) {
  const auto run = workspace_->database().find_run(run_id);
  if (!run) throw InputError(fmt::format("--resume: the workspace has no run {}", run_id));
  if (run->problem_hash != problem_hash(*target_.problem))
    throw InputError(
        fmt::format("--resume: run {} optimized {} with definition hash {}, this problem's is {}",
                    run_id, run->problem_name, run->problem_hash, problem_hash(*target_.problem)));
  if (run->status != RunStatus::Running && run->status != RunStatus::Stopped)
    throw InputError(
        fmt::format("--resume: run {} is already {}", run_id, run_status_name(run->status)));
  if (run->status == RunStatus::Running && run->owner && *run->owner != this_process() &&
      process_alive(*run->owner) == true)
    throw InputError(fmt::format("--resume: run {} is still running (process {} on {})", run_id,
                                 run->owner->pid, run->owner->host));
  options_ = stored_options(*run);
  workspace_->database().claim_run(run_id);
  return execute(run_id);
}

OptimizeSummary Orchestrator::execute(int64_t run_id) {
  OptimizeRun run(target_, *evaluator_, *pool_, *workspace_, options_, *progress_, run_id, stop_);
  return run.execute();
}

nlohmann::json summary_to_json(const OptimizeSummary& summary) {
  auto finalist_json = [](const Finalist& finalist) {
    return nlohmann::json{{"candidate", finalist.candidate_id},
                          {"agent", finalist.agent},
                          {"label", finalist.label},
                          {"fitness", finalist.fitness},
                          {"measurement", measurement_to_json(finalist.measurement)}};
  };
  nlohmann::json json = {{"stop_reason", summary.stop_reason},
                         {"evaluated", summary.evaluated},
                         {"passed", summary.passed},
                         {"measured", summary.measured},
                         {"evaluators", summary.evaluators},
                         {"search_seconds", summary.search_seconds},
                         {"skipped_agents", summary.skipped_agents},
                         {"finalists", nlohmann::json::array()},
                         {"kept_baseline", summary.kept_baseline},
                         {"lineage", nlohmann::json::array()}};
  if (summary.baseline) json["baseline"] = finalist_json(*summary.baseline);
  for (const Finalist& finalist : summary.finalists)
    json["finalists"].push_back(finalist_json(finalist));
  if (summary.speedup)
    json["speedup"] = {{"value", summary.speedup->value},
                       {"low", summary.speedup->low},
                       {"high", summary.speedup->high}};
  for (const LineageStep& step : summary.lineage)
    json["lineage"].push_back({{"candidate", step.candidate_id},
                               {"agent", step.agent},
                               {"operation", step.operation},
                               {"changes", step.changes},
                               {"note", step.note}});
  json["conclusions"] = nlohmann::json::array();
  for (const Conclusion& conclusion : summary.conclusions)
    json["conclusions"].push_back(conclusion_to_json(conclusion));
  if (summary.winner_route) json["winner_route"] = conclusion_to_json(*summary.winner_route);
  if (summary.synthesis.calls > 0)
    json["synthesis"] = {{"calls", summary.synthesis.calls},
                         {"cached", summary.synthesis.cached},
                         {"failures", summary.synthesis.failures},
                         {"input_tokens", summary.synthesis.input_tokens},
                         {"output_tokens", summary.synthesis.output_tokens},
                         {"cost_usd", summary.synthesis.cost_usd}};
  return json;
}

std::string lineage_step_text(const LineageStep& step) {
  std::string text = fmt::format("#{} {} {}{}", step.candidate_id, step.agent, step.operation,
                                 step.changes.empty() ? "" : " (" + step.changes + ")");
  if (step.note.empty()) return text;
  std::string_view note = step.note;
  if (const std::string prefix = step.operation + ": "; note.starts_with(prefix))
    note.remove_prefix(prefix.size());
  return fmt::format("{}: {}", text, note);
}

}  // namespace kernelarc

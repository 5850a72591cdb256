// `kernelarc optimize <problem-dir>`: the multi-agent search over the template library, through
// the guard, stored in the workspace (resumable), ending with a side-by-side re-measurement of
// the best candidates and the bundled baseline; writes the winner as solution.json + sources.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "cli/code_synth_setup.h"
#include "cli/commands.h"
#include "cli/extra_files.h"
#include "cli/guard_session.h"
#include "cli/optimize_progress.h"
#include "cli/optimize_skills.h"
#include "cli/table.h"
#include "core/error.h"
#include "diagnosis/diagnosis.h"
#include "optimize/search_setup.h"
#include "optimize/strategy.h"
#include "search/selection.h"

namespace kernelarc {

namespace {

struct OptimizeFlags {
  std::string problem_dir;
  int64_t budget = 64;
  std::string agents = "6";
  std::string policy = "mcts";
  uint64_t seed = 1;
  std::string backend;
  std::string synth = "template";
  std::string resume;
  int plateau = 8;
  int build_ahead = -1;
  int final_candidates = 3;
  int final_rounds = 3;
  int search_trials = 3;
  bool no_skills = false;
  double wall_time_s = 0;
  std::string out;
  std::string baseline;
  std::string root;
  std::vector<std::string> files;
  bool plain = false;
  GuardFlags guard;
  CodeSynthFlags code;
};

nlohmann::json guard_config(const GuardFlags& flags, int search_trials) {
  return {{"device", flags.device},         {"trials", flags.trials},
          {"search_trials", search_trials}, {"warmup", flags.warmup},
          {"iterations", flags.iterations}, {"budget_s", flags.budget_s},
          {"timeout_ms", flags.timeout_ms}, {"seed", flags.seed},
          {"cflags", flags.cflags}};
}

void apply_guard_config(const nlohmann::json& json, GuardFlags& flags, int& search_trials,
                        int64_t run_id) {
  try {
    flags.device = json.at("device").get<std::string>();
    flags.trials = json.at("trials").get<int>();
    search_trials = json.value("search_trials", flags.trials);
    flags.warmup = json.at("warmup").get<int>();
    flags.iterations = json.at("iterations").get<int>();
    flags.budget_s = json.at("budget_s").get<double>();
    flags.timeout_ms = json.at("timeout_ms").get<int>();
    flags.seed = json.at("seed").get<uint64_t>();
    flags.cflags = json.at("cflags").get<std::string>();
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("run {} config: field \"guard\": {}", run_id, error.what()));
  }
}

/// The run --resume names, or the newest running run of this problem.
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
    if (run->problem_name == problem && run->status == RunStatus::Running) return *run;
  throw InputError(fmt::format("--resume: no unfinished run of {} in the workspace", problem));
}

std::string ms(const std::optional<double>& value) {
  return value ? fmt::format("{:.4f}", *value) : "-";
}

void write_outputs(const std::filesystem::path& dir, const Finalist& winner,
                   const nlohmann::json& summary) {
  std::filesystem::create_directories(dir / "sources");
  auto write = [&](const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream file(path);
    if (!file) throw InputError(fmt::format("--out: cannot write {}", path.string()));
    file << text;
  };
  write(dir / "solution.json", solution_to_json(winner.solution).dump(2) + "\n");
  for (const SourceFile& source : winner.solution.sources)
    write(dir / "sources" / source.path, source.content);
  OrderedJson traces = OrderedJson::array();
  for (const Trace& trace : winner.traces) traces.push_back(trace_to_json(trace));
  write(dir / "traces.json", traces.dump(2) + "\n");
  write(dir / "summary.json", summary.dump(2) + "\n");
}

void print_summary(const OptimizeSummary& summary, const Problem& problem, std::ostream& out) {
  out << fmt::format("\nrun {} stopped ({}): {} candidates evaluated, {} passed\n", summary.run_id,
                     summary.stop_reason, summary.evaluated, summary.passed);
  if (summary.synthesis.calls > 0) out << synthesis_text(summary.synthesis) << '\n';
  if (summary.finalists.empty()) {
    out << "no candidate passed the guard\n";
    return;
  }
  TextTable finals({"rank", "candidate", "agent", "solution", "speedup", "geomean_ms"});
  if (summary.baseline)
    finals.add_row({"-", std::to_string(summary.baseline->candidate_id), "baseline",
                    summary.baseline->label, "1.00x",
                    fmt::format("{:.4f}", geometric_mean_ms(summary.baseline->measurement))});
  for (std::size_t i = 0; i < summary.finalists.size(); ++i) {
    const Finalist& finalist = summary.finalists[i];
    finals.add_row({std::to_string(i + 1), std::to_string(finalist.candidate_id), finalist.agent,
                    finalist.label, fmt::format("{:.2f}x", finalist.fitness),
                    fmt::format("{:.4f}", geometric_mean_ms(finalist.measurement))});
  }
  out << "re-measured side by side, interleaved (speedup: geometric mean over workloads):\n";
  finals.print(out);

  const Finalist& winner = summary.finalists.front();
  TextTable table({"workload", "baseline_ms", "best_ms", "ci95_ms", "eager_ms", "compiled_ms",
                   "sol_ms", "sol_score"});
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
      score = fmt::format("{:.3f}", 1 / (1 + (t.median_ms - *t.sol_ms) / (*torch_ms - *t.sol_ms)));
    table.add_row({format_axes(workload.axes), ms(baseline_ms), fmt::format("{:.4f}", t.median_ms),
                   fmt::format("{:.4f}-{:.4f}", t.ci_low_ms, t.ci_high_ms), ms(t.eager_ms),
                   ms(t.compiled_ms), ms(t.sol_ms), score});
  }
  out << fmt::format("winner: candidate {} ({}, found by {})\n", winner.candidate_id, winner.label,
                     winner.agent);
  table.print(out);
  const std::string largest_uuid = largest_workload(problem.workloads).uuid;
  const auto largest =
      std::find_if(winner.traces.begin(), winner.traces.end(), [&](const Trace& t) {
        return t.extra.is_object() && t.extra.contains("diagnosis") &&
               t.workload.value("uuid", std::string()) == largest_uuid;
      });
  if (largest != winner.traces.end())
    out << "diagnosis at the largest workload: "
        << diagnosis_text(Diagnosis::from_json(largest->extra["diagnosis"])) << '\n';
  if (summary.speedup)
    out << fmt::format("speedup over the baseline: {:.2f}x ({:.2f}-{:.2f})\n",
                       summary.speedup->value, summary.speedup->low, summary.speedup->high);
  std::vector<std::string> steps;
  for (const LineageStep& step : summary.lineage)
    steps.push_back(fmt::format("#{} {} {}{}", step.candidate_id, step.agent, step.operation,
                                step.changes.empty() ? "" : " (" + step.changes + ")"));
  out << fmt::format("lineage: {}\n", fmt::join(steps, " -> "));
}

int run_optimize(OptimizeFlags flags, bool resume_given) {
  const SynthChoice synth = parse_synth(flags.synth);
  if (!flags.backend.empty()) {
    if (flags.backend != "cpu" && flags.backend != "cuda")
      throw InputError(fmt::format("--backend {}: expected cpu or cuda", flags.backend));
    if (flags.guard.device == "cpu" && flags.backend == "cuda") flags.guard.device = "cuda:0";
    if ((flags.guard.device == "cpu") != (flags.backend == "cpu"))
      throw InputError(
          fmt::format("--backend {} and --device {} disagree", flags.backend, flags.guard.device));
  }
  Workspace workspace(flags.guard.workspace);
  std::optional<Run> resumed;
  std::vector<std::string> workload_ids = flags.guard.workloads;
  if (resume_given) {
    const Problem problem = load_problem(flags.problem_dir);
    resumed = run_to_resume(workspace.database(), flags.resume, problem.definition.name);
    apply_guard_config(resumed->config.value("guard", nlohmann::json::object()), flags.guard,
                       flags.search_trials, resumed->id);
    workload_ids = resumed->config.value("workloads", std::vector<std::string>{});
    flags.baseline = resumed->config.value("baseline", std::string());
  }
  flags.guard.workloads = workload_ids;

  SearchSetupOptions setup_options;
  setup_options.device = flags.guard.device;
  setup_options.template_root = flags.root;
  setup_options.extra_files = read_extra_files(flags.files);
  setup_options.baseline = flags.baseline;
  setup_options.require_templates = synth.code.empty();
  const SearchSetup setup(flags.problem_dir, setup_options);
  std::unique_ptr<CodeSynthSetup> code;
  if (!synth.code.empty())
    code = std::make_unique<CodeSynthSetup>(synth.code, flags.code, flags.guard.workspace);

  // The search screens candidates with fewer correctness draws; the finalists' re-measurement
  // runs every draw, so the reported winner has passed the full guard.
  flags.search_trials = std::min(flags.search_trials, flags.guard.trials);
  GuardFlags search_flags = flags.guard;
  search_flags.no_baseline = true;
  search_flags.json_path.clear();
  search_flags.trials = flags.search_trials;
  GuardSession search(search_flags);
  GuardSession final_guard(flags.guard);
  const auto workloads = search.select_workloads(setup.problem());
  OptimizeTarget target = setup.target(workloads);
  if (!synth.templates) target.templates.clear();
  if (code) {
    target.code_synthesizer = &code->synthesizer();
    target.hardware = hardware_facts(flags.guard.workspace, flags.guard.device);
    target.knowledge = synthesis_knowledge(
        flags.guard.workspace, setup.problem().definition.ext.op_family, flags.guard.device);
  }
  std::vector<std::string> uuids;
  for (const Workload& workload : workloads) uuids.push_back(workload.uuid);
  const std::string hardware = hardware_name(flags.guard.workspace, flags.guard.device);
  const SkillCondition condition{
      setup.problem().definition.ext.op_family,
      fmt::format("{}: {}", setup.problem().definition.name, target.workload_class), hardware,
      setup.problem().definition.name};
  if (resumed) {
    target.skill_hints =
        skill_hints_from_json(resumed->config.value("skill_hints", nlohmann::json::array()),
                              fmt::format("run {} config", resumed->id));
  } else if (!flags.no_skills) {
    std::vector<std::string> templates;
    for (const BoundTemplate* bound : target.templates) templates.push_back(bound->kernel().name);
    target.skill_hints = retrieve_skill_hints(flags.guard.workspace, condition, templates);
  }
  target.run_config = {
      {"guard", guard_config(flags.guard, flags.search_trials)},
      {"workloads", flags.guard.workloads.empty() ? std::vector<std::string>{} : uuids},
      {"baseline", flags.baseline},
      {"skill_hints", skill_hints_to_json(target.skill_hints)}};
  GuardEvaluator evaluator(search.guard(), final_guard.guard(), setup.problem(), workloads,
                           hardware);

  OptimizeOptions options;
  options.budget = flags.budget;
  options.agents = parse_agent_list(flags.agents);
  options.policy = flags.policy;
  const auto& policies = policy_names();
  if (std::find(policies.begin(), policies.end(), options.policy) == policies.end())
    throw InputError(
        fmt::format("--policy {}: expected one of {}", options.policy, fmt::join(policies, ", ")));
  options.seed = flags.seed;
  options.plateau = flags.plateau;
  // Compiling ahead on a CPU would steal cores from the timed runs; on a GPU it hides nvcc's
  // tens of seconds per GEMM candidate behind the measurements, on half the host's cores.
  const int gpu_build_ahead =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 2, 2, 8);
  options.build_ahead = flags.build_ahead >= 0
                            ? flags.build_ahead
                            : (flags.guard.device == "cpu" ? 0 : gpu_build_ahead);
  options.final_candidates = flags.final_candidates;
  options.final_rounds = flags.final_rounds;
  if (flags.wall_time_s > 0) options.wall_time_s = flags.wall_time_s;
  if (code) {
    options.code_share = flags.code.code_share;
    options.repair_rounds = code->repair_rounds();
    options.max_synthesis_tokens = code->max_tokens();
    options.max_synthesis_cost_usd = code->max_cost_usd();
  }

  const bool terminal = !flags.plain && isatty(STDOUT_FILENO);
  auto progress = make_progress(std::cout, terminal);
  std::cout << fmt::format(
      "optimizing {} on {} ({}), {} template(s); {} correctness draws per workload while "
      "searching, {} for the finalists\n",
      setup.problem().definition.name, flags.guard.device, target.workload_class,
      target.templates.size(), flags.search_trials, flags.guard.trials);
  if (code) std::cout << code->description() << '\n';
  Orchestrator orchestrator(target, evaluator, workspace, options, *progress);
  const OptimizeSummary summary = resumed ? orchestrator.resume(resumed->id) : orchestrator.run();
  print_summary(summary, setup.problem(), std::cout);
  if (!flags.no_skills) record_run_skills(flags.guard.workspace, summary, condition, std::cout);
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
    write_outputs(out, summary.best(), summary_to_json(summary));
    std::cout << fmt::format("best solution written to {}\n", (out / "solution.json").string());
  }
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
  cmd->add_option("--wall-time", flags->wall_time_s, "stop proposing after this many seconds");
  cmd->add_option("--out", flags->out, "where the winner goes (default WORKSPACE/runs/ID)");
  cmd->add_option("--baseline", flags->baseline,
                  "solution speedups are measured against (default solutions/naive or "
                  "solutions/basic; \"none\")");
  cmd->add_option("--templates", flags->root, "template library root");
  cmd->add_option("--file", flags->files, "NAME=PATH added to every instantiated solution");
  cmd->add_flag("--plain", flags->plain, "line output even on a terminal");
  add_guard_flags(*cmd, flags->guard, {"--timing-budget", "--input-seed"});
  return [flags, resume] { return run_optimize(*flags, resume->count() > 0); };
}

}  // namespace kernelarc

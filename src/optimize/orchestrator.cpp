#include "optimize/orchestrator.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "core/elapsed.h"
#include "core/error.h"
#include "core/hash.h"
#include "optimize/agent.h"
#include "optimize/code_moves.h"
#include "optimize/conclusions.h"
#include "optimize/shape_dispatch.h"
#include "search/budget_bandit.h"

namespace kernelarc {

namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;
using NodeRef = std::pair<std::size_t, int>;  // agent index, node id in its tree

/// What the diagnosis adds to a favoured agent's bandit score: about one verified improvement.
constexpr double kAdviceBonus = 0.5;

std::string point_key(const std::string& template_name, const KnobPoint& point) {
  return template_name + "|" + format_knob_point(point);
}

}  // namespace

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
                         {"min_gain", min_gain},
                         {"final_candidates", final_candidates},
                         {"final_rounds", final_rounds}};
  if (wall_time_s) json["wall_time_s"] = *wall_time_s;
  json["code_share"] = code_share;
  json["repair_rounds"] = repair_rounds;
  if (max_synthesis_tokens) json["max_synthesis_tokens"] = *max_synthesis_tokens;
  if (max_synthesis_cost_usd) json["max_synthesis_cost_usd"] = *max_synthesis_cost_usd;
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
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("{}: field \"{}\": {}", where, field, error.what()));
  }
  return options;
}

OptimizeOptions stored_options(const Run& run) {
  return OptimizeOptions::from_json(run.config.value("options", nlohmann::json::object()),
                                    fmt::format("run {} config", run.id));
}

struct Orchestrator::State {
  struct Known {
    int64_t candidate_id = 0;
    std::string agent;
    std::string template_name;
    KnobPoint point;
    std::optional<Measurement> measurement;
    std::vector<NodeRef> waiters;  // agent nodes that receive its result
  };
  struct Pending {
    int64_t seq = 0;
    int64_t candidate_id = 0;
    std::size_t agent = 0;
    int node = 0;
    std::string key;
    Solution solution;
    /// Set for a code candidate whose synthesizer gave no program: it is recorded as failed
    /// without an evaluation.
    std::optional<std::string> synthesis_failure;
    /// The synthesis failure was the transport's (no answer): kept out of recent failures.
    bool transport_failure = false;
    std::future<void> build;
  };

  int64_t run_id = 0;
  std::vector<Candidate> stored;
  std::size_t board_stored = 0;
  std::size_t board_posted = 0;
  int64_t next_seq = 0;
  std::vector<std::unique_ptr<Agent>> agents;
  std::unique_ptr<BudgetBandit> bandit;
  std::set<std::string> exhausted;
  std::map<std::string, const BoundTemplate*> bound;
  std::map<std::string, Known> known;
  std::map<int64_t, std::string> key_of_candidate;
  std::map<NodeRef, int64_t> candidate_of_node;
  std::map<int64_t, NodeRef> node_of_candidate;
  std::optional<std::map<std::string, double>> reference;
  std::optional<Measurement> baseline;
  int64_t baseline_candidate = 0;
  std::optional<int64_t> incumbent;
  double incumbent_fitness = 0;
  double incumbent_noise = 0;
  std::vector<Conclusion> conclusions;
  std::set<std::string> concluded;
  std::map<std::string, std::string> last_board;
  int64_t proposed = 0;
  int64_t evaluated = 0;
  int64_t passed = 0;
  std::deque<Pending> queue;
  std::vector<std::string> skipped_agents;
  // The code synthesizer's pseudo-template, the programs it wrote (by candidate), the reasons
  // of the last failures (for its next prompt) and what it spent.
  std::string code_template;
  std::unique_ptr<ConstrainedSpace> code_space;
  std::map<int64_t, Solution> programs;
  std::deque<std::string> recent_failures;
  SynthesisTotals synthesis;
};

Orchestrator::Orchestrator(OptimizeTarget target, CandidateEvaluator& evaluator,
                           Workspace& workspace, OptimizeOptions options, ProgressSink& progress)
    : target_(std::move(target)),
      evaluator_(&evaluator),
      workspace_(&workspace),
      options_(std::move(options)),
      progress_(&progress) {
  if (options_.budget < 1) throw InputError("--budget: expected at least 1 candidate");
  if (options_.plateau < 1) throw InputError("--plateau: expected at least 1");
  if (options_.build_ahead < 0) throw InputError("--build-ahead: expected 0 or more");
  if (options_.final_rounds < 1) throw InputError("--final-rounds: expected at least 1");
  if (options_.code_share < 0 || options_.code_share > 1)
    throw InputError("--code-share: expected a value from 0 to 1");
  if (options_.repair_rounds < 0) throw InputError("--repair-rounds: expected 0 or more");
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
  if (run->status != RunStatus::Running)
    throw InputError(
        fmt::format("--resume: run {} is already {}", run_id, run_status_name(run->status)));
  options_ = stored_options(*run);
  return execute(run_id);
}

OptimizeSummary Orchestrator::execute(int64_t run_id) {
  Database& db = workspace_->database();
  ObjectStore& objects = workspace_->objects();
  State state;
  state.run_id = run_id;
  state.stored = db.candidates_of(run_id);
  state.board_stored = db.board_of(run_id).size();
  for (const BoundTemplate* bound : target_.templates) state.bound[bound->kernel().name] = bound;
  if (target_.code_synthesizer) {
    state.code_template = target_.code_synthesizer->name();
    state.code_space = std::make_unique<ConstrainedSpace>(code_space());
    state.synthesis = db.synthesis_totals(run_id);
  }
  const SpaceLookup spaces = [&state](const std::string& name) -> const ConstrainedSpace* {
    if (state.code_space && name == state.code_template) return state.code_space.get();
    const auto found = state.bound.find(name);
    return found == state.bound.end() ? nullptr : &found->second->space();
  };

  // Agents, each with the templates its strategy can act on.
  std::vector<std::string> active;
  for (std::size_t i = 0; i < options_.agents.size(); ++i) {
    const Strategy& strategy = find_strategy(options_.agents[i]);
    std::vector<std::string> templates;
    for (const BoundTemplate* bound : target_.templates) {
      const auto& knobs = bound->space().space().knobs();
      if (std::any_of(knobs.begin(), knobs.end(),
                      [&](const Knob& knob) { return strategy_changes(strategy, knob); }))
        templates.push_back(bound->kernel().name);
    }
    if (state.code_space) templates.push_back(state.code_template);
    if (templates.empty()) {
      state.skipped_agents.push_back(strategy.name);
      progress_->message(
          fmt::format("agent {}: no template of this problem has a {} knob; "
                      "not started",
                      strategy.name, fmt::join(strategy.roles, "/")));
      continue;
    }
    AgentOptions agent_options{options_.policy,     options_.seed * 0x9E3779B97F4A7C15ull + i + 1,
                               options_.plateau,    options_.min_gain,
                               target_.skill_hints, state.code_template,
                               options_.code_share, options_.repair_rounds};
    state.agents.push_back(
        std::make_unique<Agent>(strategy.name, strategy, templates, spaces, agent_options));
    active.push_back(strategy.name);
  }
  if (active.empty()) throw InputError("--agents: no agent has a template to work on");
  if (!target_.skill_hints.empty())
    progress_->message(
        fmt::format("warm start: {} skill(s) from earlier runs as first points "
                    "and priors",
                    target_.skill_hints.size()));
  state.bandit = std::make_unique<BudgetBandit>(active, BanditOptions{.seed = options_.seed});

  auto post = [&](BoardKind kind, const std::string& agent, const std::string& text,
                  const std::vector<int64_t>& evidence) {
    if (state.board_posted++ >= state.board_stored) {
      db.append_board(run_id, kind, text, evidence);
      progress_->message(fmt::format("board: {}", text));
    }
    state.last_board[agent] = text;
  };

  // A candidate row for the next seq: the stored one when replaying (it must be what was
  // proposed then), else a new one written after its solution object.
  auto candidate_for = [&](const std::string& agent, std::optional<int64_t> parent,
                           std::vector<int64_t> inspired, const Solution* solution,
                           const std::string& template_name, const KnobPoint& point,
                           const std::string& note = "") {
    const int64_t seq = state.next_seq++;
    if (seq < static_cast<int64_t>(state.stored.size())) {
      const Candidate& stored = state.stored[seq];
      const KnobPoint stored_point = knob_point_from_json(stored.knob_point);
      if (stored.agent != agent || stored.template_name != template_name || stored_point != point)
        throw InputError(fmt::format(
            "--resume: run {} diverged at candidate {}: stored {} {} {}, now {} {} {} (did the "
            "template library or kernelarc change since?)",
            run_id, seq, stored.agent, stored.template_name, format_knob_point(stored_point), agent,
            template_name, format_knob_point(point)));
      return stored.id;
    }
    NewCandidate candidate;
    candidate.agent = agent;
    candidate.parent_id = parent;
    candidate.inspired_by = std::move(inspired);
    // A code candidate without a program stores null: its synthesis record says why.
    candidate.solution_key =
        objects.put(solution ? solution_to_json(*solution).dump() : std::string("null"));
    candidate.template_name = template_name;
    candidate.knob_point = knob_point_to_json(point);
    candidate.note = note;
    return db.add_candidate(run_id, candidate);
  };

  // The stored measurement when replaying, else the evaluator's, stored before it is used.
  auto measure = [&](int64_t candidate_id, const Solution& solution,
                     const std::optional<std::string>& synthesis_failure, bool& replayed) {
    if (const auto evaluation = db.evaluation_of(candidate_id)) {
      replayed = true;
      const auto blob = nlohmann::json::parse(objects.get(evaluation->traces_key));
      return measurement_from_json(blob.at("measurement"),
                                   fmt::format("evaluation of candidate {}", candidate_id));
    }
    replayed = false;
    std::vector<Trace> traces;
    Measurement measurement;
    if (synthesis_failure) {
      measurement.passed = false;
      measurement.status = std::string(kSynthesisFailed);
      measurement.log = *synthesis_failure;
    } else {
      traces = evaluator_->evaluate(solution);
      measurement = measurement_of(traces);
    }
    OrderedJson blob;
    blob["measurement"] = OrderedJson::parse(measurement_to_json(measurement).dump());
    blob["traces"] = OrderedJson::array();
    for (const Trace& trace : traces) blob["traces"].push_back(trace_to_json(trace));
    Evaluation evaluation;
    evaluation.status = measurement.status;
    evaluation.traces_key = objects.put(blob.dump());
    if (measurement.passed) {
      evaluation.median_ms = geometric_mean_ms(measurement);
      evaluation.ci_low_ms = geometric_mean_ms(measurement, &WorkloadTime::ci_low_ms);
      evaluation.ci_high_ms = geometric_mean_ms(measurement, &WorkloadTime::ci_high_ms);
      evaluation.sol_score = sol_fraction(measurement);
    }
    db.record_evaluation(candidate_id, evaluation);
    return measurement;
  };

  auto result_of = [&](const Measurement& measurement, const std::string& template_name) {
    CandidateResult result;
    if (!measurement.passed) return result;
    if (!state.reference) state.reference = reference_times(measurement);
    const Fitness fitness = fitness_of(measurement, *state.reference);
    result.passed = true;
    result.fitness = fitness.value;
    result.noise = fitness.noise;
    const auto index = std::distance(state.bound.begin(), state.bound.find(template_name));
    result.features = {{"template", index}};
    if (measurement.occupancy)
      result.features["occupancy_quartile"] =
          std::min<int64_t>(3, static_cast<int64_t>(*measurement.occupancy * 4));
    if (const auto fraction = sol_fraction(measurement))
      result.features["sol_quartile"] = std::min<int64_t>(3, static_cast<int64_t>(*fraction * 4));
    return result;
  };

  auto view = [&]() {
    ProgressView view;
    view.run_id = run_id;
    view.budget = options_.budget;
    view.evaluated = state.evaluated;
    view.synthesis = state.synthesis;
    if (state.incumbent) {
      const Measurement& best =
          *state.known.at(state.key_of_candidate.at(*state.incumbent)).measurement;
      view.best_fitness = state.incumbent_fitness;
      view.best_sol_fraction = sol_fraction(best);
      view.sol_bound_beaten = sol_bound_beaten(best);
      const auto largest = best.times.find(target_.largest_workload);
      if (largest != best.times.end()) {
        view.best_median_ms = largest->second.median_ms;
        if (largest->second.sol_ms)
          view.best_largest_sol_fraction =
              std::min(1.0, *largest->second.sol_ms / largest->second.median_ms);
      }
    }
    for (const auto& agent : state.agents) {
      AgentLine line{agent->name(), agent->strategy().name, static_cast<int>(agent->tree().size()),
                     std::nullopt, ""};
      if (const auto best = agent->best()) line.best_fitness = agent->tree().node(*best).fitness;
      if (const auto board = state.last_board.find(agent->name()); board != state.last_board.end())
        line.last_board = board->second;
      view.agents.push_back(std::move(line));
    }
    return view;
  };

  auto snapshot = [&]() {
    SharedView shared;
    shared.conclusions = state.conclusions;
    for (std::size_t i = 0; i < state.agents.size(); ++i) {
      const Agent& agent = *state.agents[i];
      const auto best = agent.best();
      if (!best) continue;
      const SearchNode& node = agent.tree().node(*best);
      shared.bests.push_back({agent.name(), state.candidate_of_node.at({i, *best}),
                              node.template_name, node.point, *node.fitness, node.noise});
    }
    std::stable_sort(shared.bests.begin(), shared.bests.end(),
                     [](const AgentBest& a, const AgentBest& b) { return a.fitness > b.fitness; });
    return shared;
  };

  auto is_code = [&](const std::string& template_name) {
    return state.code_space && template_name == state.code_template;
  };
  auto label_of = [&](const State::Known& known) {
    if (is_code(known.template_name))
      return fmt::format("{} program {} of {}", known.template_name, format_knob_point(known.point),
                         known.agent);
    return fmt::format("{} {}", known.template_name, format_knob_point(known.point));
  };
  // The solution a candidate ran: the baseline, a program, or a template instance.
  auto solution_of = [&](int64_t candidate_id) -> std::optional<Solution> {
    if (candidate_id == state.baseline_candidate && target_.baseline) return *target_.baseline;
    if (const auto program = state.programs.find(candidate_id); program != state.programs.end())
      return program->second;
    const State::Known& known = state.known.at(state.key_of_candidate.at(candidate_id));
    const auto bound = state.bound.find(known.template_name);
    if (bound == state.bound.end()) return std::nullopt;  // a program that was never written
    return bound->second->instantiate(known.point, target_.extra_files);
  };
  auto measurement_of_candidate = [&](int64_t candidate_id) -> std::optional<Measurement> {
    if (candidate_id == state.baseline_candidate) return state.baseline;
    return state.known.at(state.key_of_candidate.at(candidate_id)).measurement;
  };

  // What the code synthesizer is told about a candidate it builds on.
  auto context_of = [&](int64_t candidate_id) -> std::optional<CandidateContext> {
    auto solution = solution_of(candidate_id);
    if (!solution) return std::nullopt;
    CandidateContext context;
    context.candidate_id = candidate_id;
    context.solution = std::move(*solution);
    if (const auto measurement = measurement_of_candidate(candidate_id)) {
      context.status = measurement->status;
      context.results =
          results_text(*measurement, state.reference.value_or(std::map<std::string, double>{}),
                       target_.problem->workloads);
      if (!measurement->passed) context.log = measurement->log;
    }
    if (const auto evaluation = db.evaluation_of(candidate_id)) {
      const OrderedJson blob = OrderedJson::parse(objects.get(evaluation->traces_key));
      if (blob.contains("traces"))
        context.diagnosis = diagnosis_at(blob.at("traces"), target_.largest_workload);
    }
    return context;
  };

  auto synthesis_request = [&](const Proposal& proposal, const Agent& agent,
                               std::optional<int64_t> parent,
                               const std::vector<int64_t>& inspired) {
    SynthesisRequest request;
    request.problem = target_.problem;
    request.workloads = target_.workloads;
    request.device = target_.device;
    request.hardware = target_.hardware;
    request.agent = agent.name();
    request.strategy = agent.strategy().description;
    const auto parent_measurement = parent ? measurement_of_candidate(*parent) : std::nullopt;
    request.move = code_move(proposal, parent_measurement && !parent_measurement->passed);
    if (parent) request.parent = context_of(*parent);
    if (!request.parent) request.move = SynthesisMove::Draft;
    for (int64_t id : inspired)
      if (auto context = context_of(id)) request.inspirations.push_back(std::move(*context));
    if (request.move == SynthesisMove::Draft && state.baseline)
      if (auto context = context_of(state.baseline_candidate))
        request.inspirations.push_back(std::move(*context));
    request.seed = options_.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(state.next_seq);
    request.knowledge = knowledge_for_request(target_.knowledge, request.seed);
    for (const Conclusion& conclusion : state.conclusions)
      request.board.push_back(conclusion_text(conclusion, target_.problem->definition.name,
                                              target_.workload_class, evaluator_->device_name()));
    request.recent_failures.assign(state.recent_failures.begin(), state.recent_failures.end());
    return request;
  };

  // A code candidate's program: read back when replaying, else asked of the synthesizer, whose
  // exchanges are stored and linked to the candidate.
  auto write_program = [&](State::Pending& pending, const Proposal& proposal, const Agent& agent,
                           std::optional<int64_t> parent, const std::vector<int64_t>& inspired) {
    std::optional<Synthesis> record;
    if (state.next_seq < static_cast<int64_t>(state.stored.size())) {
      const Candidate& stored = state.stored[state.next_seq];
      const OrderedJson json = OrderedJson::parse(objects.get(stored.solution_key));
      if (json.is_null()) {
        const auto synthesis = db.synthesis_of(stored.id);
        pending.synthesis_failure =
            synthesis ? synthesis->failure : "the synthesizer wrote nothing";
      } else {
        pending.solution =
            parse_solution(json, fmt::format("candidate {}'s solution", stored.id), {});
      }
    } else {
      const SynthesisRequest request = synthesis_request(proposal, agent, parent, inspired);
      SynthesisOutcome outcome = target_.code_synthesizer->synthesize(request);
      nlohmann::json exchanges = nlohmann::json::array();
      for (const SynthesisExchange& exchange : outcome.exchanges)
        exchanges.push_back({{"model", exchange.model},
                             {"request", exchange.request},
                             {"response", exchange.response}});
      record = Synthesis{state.code_template,
                         outcome.exchanges.empty() ? "" : outcome.exchanges.back().model,
                         objects.put(nlohmann::json{
                             {"move", synthesis_move_name(request.move)},
                             {"failure", outcome.failure},
                             {"exchanges",
                              exchanges}}.dump()),
                         outcome.failure,
                         outcome.usage.input_tokens,
                         outcome.usage.output_tokens,
                         outcome.usage.cost_usd,
                         outcome.usage.from_cache};
      if (outcome.solution)
        pending.solution = std::move(*outcome.solution);
      else
        pending.synthesis_failure = outcome.failure;
      pending.transport_failure = outcome.transport_failure;
    }
    pending.candidate_id = candidate_for(agent.name(), parent, inspired,
                                         pending.synthesis_failure ? nullptr : &pending.solution,
                                         proposal.template_name, proposal.point);
    if (record) {
      db.record_synthesis(pending.candidate_id, *record);
      SynthesisTotals& totals = state.synthesis;
      ++totals.calls;
      totals.cached += record->from_cache;
      totals.failures += !record->failure.empty();
      totals.input_tokens += record->input_tokens;
      totals.output_tokens += record->output_tokens;
      totals.cost_usd += record->cost_usd;
    }
    if (!pending.synthesis_failure) state.programs[pending.candidate_id] = pending.solution;
  };

  // Why the synthesizer may not be asked again, or nullopt.
  auto synthesis_budget_spent = [&]() -> std::optional<std::string> {
    const SynthesisTotals& totals = state.synthesis;
    const int64_t tokens = totals.input_tokens + totals.output_tokens;
    if (options_.max_synthesis_tokens && tokens >= *options_.max_synthesis_tokens)
      return fmt::format("synthesis budget: {} tokens spent (limit {})", tokens,
                         *options_.max_synthesis_tokens);
    if (options_.max_synthesis_cost_usd && totals.cost_usd >= *options_.max_synthesis_cost_usd)
      return fmt::format("synthesis budget: ${:.4f} spent (limit ${:.4f})", totals.cost_usd,
                         *options_.max_synthesis_cost_usd);
    return std::nullopt;
  };

  // The diagnosis of the best candidate at the largest workload steers turns towards the agents
  // whose strategy addresses its bottleneck (the bandit's advice).
  auto advise_from = [&](const Measurement& best) {
    const auto largest = best.times.find(target_.largest_workload);
    if (largest == best.times.end()) return;
    std::vector<std::string> favoured;
    for (const std::string& name : strategies_for_bottleneck(largest->second.bottleneck))
      if (std::find(active.begin(), active.end(), name) != active.end()) favoured.push_back(name);
    state.bandit->advise(favoured, kAdviceBonus);
  };

  // Baseline first: it is what speedups are measured against.
  if (target_.baseline) {
    bool replayed = false;
    const int64_t id = candidate_for("baseline", std::nullopt, {}, &*target_.baseline, "", {});
    const auto measure_start = Clock::now();
    Measurement measurement = measure(id, *target_.baseline, std::nullopt, replayed);
    const Seconds evaluation = Clock::now() - measure_start;
    state.baseline_candidate = id;
    if (measurement.passed) {
      state.baseline = measurement;
      state.reference = reference_times(measurement);
    } else {
      progress_->message(
          fmt::format("baseline {} failed ({}: {}); speedups are relative to the "
                      "first passing candidate",
                      target_.baseline->name, measurement.status, measurement.log));
    }
    CandidateEvent event{
        0,           id,
        "baseline",  "baseline " + target_.baseline->name,
        measurement, measurement.passed ? std::optional<double>(1.0) : std::nullopt,
        false,       replayed,
        0.0,         evaluation.count()};
    progress_->candidate(view(), event);
  }

  // The next proposal of the agent the bandit picks; a point another agent already proposed is
  // not measured again, its result is shared.
  auto propose_next = [&]() -> std::optional<State::Pending> {
    const std::size_t max_attempts = 64 * state.agents.size() + 64;
    for (std::size_t attempt = 0; attempt < max_attempts; ++attempt) {
      if (state.exhausted.size() == state.agents.size()) return std::nullopt;
      const std::string name = state.bandit->next_agent();
      const auto index =
          static_cast<std::size_t>(std::find(active.begin(), active.end(), name) - active.begin());
      if (state.exhausted.count(name)) {
        state.bandit->record(name, false, 0);
        continue;
      }
      Agent& agent = *state.agents[index];
      auto proposed = agent.propose(snapshot());
      if (!proposed) {
        state.exhausted.insert(name);
        progress_->message(fmt::format("agent {}: no new valid point left", name));
        continue;
      }
      const Proposal& proposal = proposed->proposal;
      const int node = agent.add(proposal);
      std::optional<int64_t> parent;
      if (proposal.parent) parent = state.candidate_of_node.at({index, *proposal.parent});
      std::vector<int64_t> inspired = proposed->inspired_by_candidates;
      for (int other : proposal.inspired_by)
        inspired.push_back(state.candidate_of_node.at({index, other}));
      if (proposed->redirect) post(BoardKind::Redirect, name, *proposed->redirect, inspired);
      const bool code = is_code(proposal.template_name);
      // Programs are their agent's own: two agents' revision 3 are different code.
      const std::string key = point_key(
          code ? proposal.template_name + "@" + name : proposal.template_name, proposal.point);
      if (const auto found = state.known.find(key); found != state.known.end()) {
        State::Known& known = found->second;
        state.candidate_of_node[{index, node}] = known.candidate_id;
        if (known.measurement)
          agent.record(node, result_of(*known.measurement, proposal.template_name),
                       suggestions_at(*known.measurement, target_.largest_workload));
        else
          known.waiters.push_back({index, node});
        continue;
      }
      State::Pending pending;
      pending.agent = index;
      pending.node = node;
      pending.key = key;
      if (code) {
        write_program(pending, proposal, agent, parent, inspired);
      } else {
        pending.solution = state.bound.at(proposal.template_name)
                               ->instantiate(proposal.point, target_.extra_files);
        pending.candidate_id =
            candidate_for(name, parent, inspired, &pending.solution, proposal.template_name,
                          proposal.point, proposed->note.value_or(""));
      }
      pending.seq = state.next_seq - 1;
      state.known[key] = {pending.candidate_id, name,         proposal.template_name,
                          proposal.point,       std::nullopt, {{index, node}}};
      state.key_of_candidate[pending.candidate_id] = key;
      state.candidate_of_node[{index, node}] = pending.candidate_id;
      state.node_of_candidate[pending.candidate_id] = {index, node};
      return pending;
    }
    return std::nullopt;
  };

  auto complete = [&](State::Pending& pending) {
    const auto wait_start = Clock::now();
    if (pending.build.valid()) pending.build.wait();
    const auto measure_start = Clock::now();
    bool replayed = false;
    const Measurement measurement =
        measure(pending.candidate_id, pending.solution, pending.synthesis_failure, replayed);
    const Seconds build_wait = measure_start - wait_start;
    const Seconds evaluation = Clock::now() - measure_start;
    ++state.evaluated;
    state.passed += measurement.passed;
    State::Known& known = state.known.at(pending.key);
    known.measurement = measurement;
    if (!measurement.passed && is_code(known.template_name) && !pending.transport_failure) {
      // The prompt builder trims the log; a synthesis failure is the synthesizer's own news.
      // No candidate id: it is workspace-wide, means nothing to the model and differs between
      // a run and its replay.
      state.recent_failures.push_back(
          fmt::format("{}: {}: {}", label_of(known), measurement.status, measurement.log));
      if (state.recent_failures.size() > 3) state.recent_failures.pop_front();
    }
    const CandidateResult result = result_of(measurement, known.template_name);
    bool new_incumbent = false;
    double gain = 0;
    if (result.passed) {
      if (!state.incumbent ||
          improves_beyond_noise(*result.fitness, result.noise, state.incumbent_fitness,
                                state.incumbent_noise, options_.min_gain)) {
        gain = state.incumbent ? *result.fitness / state.incumbent_fitness - 1 : 0;
        state.incumbent = pending.candidate_id;
        state.incumbent_fitness = *result.fitness;
        state.incumbent_noise = result.noise;
        new_incumbent = true;
      }
    }
    if (new_incumbent) advise_from(measurement);
    for (const auto& [agent, node] : known.waiters)
      state.agents[agent]->record(node, result,
                                  suggestions_at(measurement, target_.largest_workload));
    known.waiters.clear();
    Agent& proposer = *state.agents[pending.agent];
    state.bandit->record(proposer.name(), new_incumbent && gain > 0, gain);

    // A conclusion when the child beat its parent beyond both intervals.
    const SearchNode& node = proposer.tree().node(pending.node);
    if (node.parent) {
      const int64_t parent_id = state.candidate_of_node.at({pending.agent, *node.parent});
      const State::Known& parent = state.known.at(state.key_of_candidate.at(parent_id));
      if (parent.measurement) {
        if (auto conclusion =
                conclude(node.template_name, parent_id, parent.point, *parent.measurement,
                         pending.candidate_id, node.point, measurement)) {
          const std::string key = node.template_name + ":" + changes_text(conclusion->changes);
          if (state.concluded.insert(key).second) {
            post(BoardKind::Conclusion, proposer.name(),
                 conclusion_text(*conclusion, target_.problem->definition.name,
                                 target_.workload_class, evaluator_->device_name()),
                 {parent_id, pending.candidate_id});
            state.conclusions.push_back(std::move(*conclusion));
          }
        }
      }
    }
    if (!replayed) db.save_agent_state(run_id, proposer.name(), proposer.summary());
    CandidateEvent event{pending.seq,        pending.candidate_id, proposer.name(), label_of(known),
                         measurement,        result.fitness,       new_incumbent,   replayed,
                         build_wait.count(), evaluation.count()};
    progress_->candidate(view(), event);
  };

  // The search: propose up to build_ahead + 1 candidates ahead, compile the queued ones on other
  // threads, measure in order.
  const auto started = Clock::now();
  std::string stop_reason = fmt::format("budget: {} candidates evaluated", options_.budget);
  bool proposing = true;
  evaluator_->prepare();
  while (true) {
    while (proposing && state.queue.size() <= static_cast<std::size_t>(options_.build_ahead)) {
      if (state.proposed >= options_.budget) {
        proposing = false;
        break;
      }
      if (options_.wall_time_s && seconds_since(started) > *options_.wall_time_s) {
        stop_reason = fmt::format("wall time: {:.0f} s", *options_.wall_time_s);
        proposing = false;
        break;
      }
      if (const auto spent = synthesis_budget_spent()) {
        stop_reason = *spent;
        proposing = false;
        break;
      }
      auto pending = propose_next();
      if (!pending) {
        stop_reason = "exhausted: no agent finds a new valid point";
        proposing = false;
        break;
      }
      ++state.proposed;
      if (options_.build_ahead > 0 && !pending->synthesis_failure &&
          !db.evaluation_of(pending->candidate_id)) {
        // The thread gets its own copy: the pending entry is moved into the queue below.
        CandidateEvaluator* evaluator = evaluator_;
        pending->build = std::async(std::launch::async, [evaluator, solution = pending->solution] {
          evaluator->prebuild(solution);
        });
      }
      state.queue.push_back(std::move(*pending));
    }
    if (state.queue.empty()) break;
    complete(state.queue.front());
    state.queue.pop_front();
  }
  for (const auto& agent : state.agents)
    db.save_agent_state(run_id, agent->name(), agent->summary());

  // The top candidates and the baseline, re-measured side by side in interleaved rounds; the
  // winner and its speedup come from this re-measurement.
  OptimizeSummary summary;
  summary.run_id = run_id;
  summary.stop_reason = stop_reason;
  summary.evaluated = state.evaluated;
  summary.passed = state.passed;
  summary.skipped_agents = state.skipped_agents;
  std::vector<const SearchTree*> trees;
  for (const auto& agent : state.agents) trees.push_back(&agent->tree());
  summary.tree_shape = tree_shape(trees);
  std::vector<std::pair<double, int64_t>> ranked;
  for (const auto& [key, known] : state.known)
    if (known.measurement && known.measurement->passed)
      ranked.push_back(
          {fitness_of(*known.measurement, *state.reference).value, known.candidate_id});
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  if (ranked.size() > static_cast<std::size_t>(options_.final_candidates))
    ranked.resize(options_.final_candidates);
  std::vector<Finalist> entries;
  if (state.baseline)
    entries.push_back({state.baseline_candidate,
                       "baseline",
                       "baseline " + target_.baseline->name,
                       *target_.baseline,
                       {},
                       {},
                       0});
  for (const auto& [fitness, id] : ranked) {
    const State::Known& known = state.known.at(state.key_of_candidate.at(id));
    entries.push_back({id, known.agent, label_of(known), *solution_of(id), {}, {}, 0});
  }
  // Where other measured points of the top candidate's template beat it at a shape beyond
  // noise, a per-shape dispatch of the top candidate competes as one more finalist.
  struct DispatchEntry {
    int64_t candidate_id = 0;
    int64_t base_id = 0;
    std::size_t variants = 0;
    std::string plan;
  };
  std::optional<DispatchEntry> dispatch;
  if (!ranked.empty()) {
    const State::Known& top = state.known.at(state.key_of_candidate.at(ranked.front().second));
    if (!is_code(top.template_name)) {
      std::vector<DispatchSource> sources;
      for (const auto& [key, known] : state.known)
        if (known.template_name == top.template_name && known.measurement)
          sources.push_back({known.candidate_id, &*known.measurement});
      const DispatchPlan plan = plan_shape_dispatch(target_.problem->workloads,
                                                    {top.candidate_id, &*top.measurement}, sources);
      if (!plan.choices.empty()) {
        const auto variants = dispatch_variants(plan, [&](int64_t id) { return *solution_of(id); });
        const Solution solution = with_variants(*solution_of(top.candidate_id), variants);
        const std::string text = dispatch_plan_text(plan);
        const int64_t id = candidate_for(
            "dispatch", top.candidate_id, dispatch_sources(plan), &solution, top.template_name,
            top.point, "per-shape dispatch of #" + std::to_string(top.candidate_id) + ": " + text);
        dispatch = DispatchEntry{id, top.candidate_id, variants.size(), text};
        progress_->message(fmt::format("candidate {}: #{} with {} shape variant(s) ({})", id,
                                       top.candidate_id, variants.size(), text));
        entries.push_back({id,
                           "dispatch",
                           fmt::format("{} + {} shape variant(s)", label_of(top), variants.size()),
                           solution,
                           {},
                           {},
                           0});
      }
    }
  }
  if (!ranked.empty())
    progress_->message(
        fmt::format("re-measuring the top {} and the baseline side by side, {} "
                    "interleaved rounds",
                    ranked.size(), options_.final_rounds));
  std::vector<std::vector<std::vector<Trace>>> rounds(entries.size());
  for (int round = 0; round < options_.final_rounds && !ranked.empty(); ++round)
    for (std::size_t i = 0; i < entries.size(); ++i)
      rounds[i].push_back(evaluator_->evaluate_final(entries[i].solution));
  std::map<std::string, double> reference =
      state.reference.value_or(std::map<std::string, double>{});
  if (state.baseline && !ranked.empty()) {
    Finalist& baseline = entries.front();
    baseline.measurement = pooled_measurement(rounds.front());
    baseline.traces = rounds.front().back();
    if (baseline.measurement.passed) {
      reference = reference_times(baseline.measurement);
      baseline.fitness = 1;
      summary.baseline = baseline;
    }
  }
  for (std::size_t i = state.baseline ? 1 : 0; i < entries.size(); ++i) {
    Finalist& finalist = entries[i];
    finalist.measurement = pooled_measurement(rounds[i]);
    if (!finalist.measurement.passed) {
      progress_->message(fmt::format("candidate {} failed its re-measurement ({}: {}); dropped",
                                     finalist.candidate_id, finalist.measurement.status,
                                     finalist.measurement.log));
      continue;
    }
    finalist.traces = rounds[i].back();
    finalist.fitness = fitness_of(finalist.measurement, reference).value;
    summary.finalists.push_back(std::move(finalist));
  }
  std::stable_sort(summary.finalists.begin(), summary.finalists.end(),
                   [](const Finalist& a, const Finalist& b) { return a.fitness > b.fitness; });
  // The winner as the search found it: a dispatch stands for the candidate it dispatches.
  const bool dispatched = dispatch && !summary.finalists.empty() &&
                          summary.finalists.front().candidate_id == dispatch->candidate_id;
  const int64_t searched_winner =
      dispatched ? dispatch->base_id
                 : (summary.finalists.empty() ? 0 : summary.finalists.front().candidate_id);
  if (!summary.finalists.empty()) {
    Finalist& winner = summary.finalists.front();
    if (summary.baseline) {
      summary.speedup = speedup_of(summary.baseline->measurement, winner.measurement);
      summary.kept_baseline = summary.speedup->high < 1.0;
    }
    // The winner's lineage through its agent's tree, root first; a dispatch's through its base.
    std::optional<NodeRef> at = state.node_of_candidate.at(searched_winner);
    while (at) {
      const Agent& agent = *state.agents[at->first];
      const SearchNode& node = agent.tree().node(at->second);
      std::string changes;
      if (node.parent && !is_code(node.template_name))
        changes = changes_text(knob_changes(agent.tree().node(*node.parent).point, node.point));
      const int64_t candidate_id = state.candidate_of_node.at(*at);
      const auto stored = db.find_candidate(candidate_id);
      summary.lineage.insert(summary.lineage.begin(),
                             {candidate_id, agent.name(), operation_name(node.operation), changes,
                              stored ? stored->note : ""});
      at = node.parent ? std::optional<NodeRef>({at->first, *node.parent}) : std::nullopt;
    }
    if (dispatched)
      summary.lineage.push_back({dispatch->candidate_id, "dispatch", "dispatch",
                                 fmt::format("{} shape variant(s)", dispatch->variants),
                                 dispatch->plan});
  }
  summary.conclusions = state.conclusions;
  summary.synthesis = state.synthesis;
  // The winner's route from its template's default point, when both were measured in the
  // search and the route beats the default beyond both intervals: the skill a warm start
  // needs most.
  if (!summary.finalists.empty()) {
    const State::Known& winner = state.known.at(state.key_of_candidate.at(searched_winner));
    const auto bound = state.bound.find(winner.template_name);
    const KnobPoint start =
        bound == state.bound.end() ? KnobPoint{} : bound->second->space().space().default_point();
    const auto origin = state.known.find(point_key(winner.template_name, start));
    if (bound != state.bound.end() && origin != state.known.end() && origin->second.measurement &&
        origin->second.measurement->passed && winner.measurement && start != winner.point) {
      const Speedup speedup = speedup_of(*origin->second.measurement, *winner.measurement);
      if (speedup.low > 1)
        summary.winner_route =
            Conclusion{winner.template_name, knob_changes(start, winner.point), speedup,
                       origin->second.candidate_id, winner.candidate_id};
    }
  }
  db.save_agent_state(run_id, "orchestrator", summary_to_json(summary));
  db.finish_run(run_id, RunStatus::Finished);
  return summary;
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

#include "optimize/optimize_run.h"

#include <algorithm>

#include <fmt/format.h>

#include "backend/device_list.h"
#include "core/elapsed.h"
#include "core/error.h"
#include "optimize/code_moves.h"

namespace kernelarc {

std::string point_key(const std::string& template_name, const KnobPoint& point) {
  return template_name + "|" + format_knob_point(point);
}

OptimizeRun::OptimizeRun(const OptimizeTarget& target, CandidateEvaluator& evaluator,
                         EvaluationPool& pool, Workspace& workspace, const OptimizeOptions& options,
                         ProgressSink& progress, int64_t run_id, const std::atomic<int>* stop)
    : target_(target),
      evaluator_(evaluator),
      pool_(pool),
      db_(workspace.database()),
      objects_(workspace.objects()),
      options_(options),
      progress_(progress),
      run_id_(run_id),
      stop_(stop) {
  stored_ = db_.candidates_of(run_id_);
  board_stored_ = db_.board_of(run_id_).size();
  for (const BoundTemplate* bound : target_.templates) bound_[bound->kernel().name] = bound;
  if (target_.code_synthesizer) {
    code_template_ = target_.code_synthesizer->name();
    code_space_ = std::make_unique<ConstrainedSpace>(code_space());
  }
  start_agents();
}

// Agents, each with the templates its strategy can act on.
void OptimizeRun::start_agents() {
  const SpaceLookup spaces = [this](const std::string& name) -> const ConstrainedSpace* {
    if (code_space_ && name == code_template_) return code_space_.get();
    const auto found = bound_.find(name);
    return found == bound_.end() ? nullptr : &found->second->space();
  };
  for (std::size_t i = 0; i < options_.agents.size(); ++i) {
    const Strategy& strategy = find_strategy(options_.agents[i]);
    std::vector<std::string> templates;
    for (const BoundTemplate* bound : target_.templates) {
      const auto& knobs = bound->space().space().knobs();
      if (std::any_of(knobs.begin(), knobs.end(),
                      [&](const Knob& knob) { return strategy_changes(strategy, knob); }))
        templates.push_back(bound->kernel().name);
    }
    if (code_space_) templates.push_back(code_template_);
    if (templates.empty()) {
      skipped_agents_.push_back(strategy.name);
      progress_.message(
          fmt::format("agent {}: no template of this problem has a {} knob; "
                      "not started",
                      strategy.name, fmt::join(strategy.roles, "/")));
      continue;
    }
    AgentOptions agent_options{options_.policy,     options_.seed * 0x9E3779B97F4A7C15ull + i + 1,
                               options_.plateau,    options_.min_gain,
                               target_.skill_hints, code_template_,
                               options_.code_share, options_.repair_rounds};
    agents_.push_back(
        std::make_unique<Agent>(strategy.name, strategy, templates, spaces, agent_options));
    active_.push_back(strategy.name);
  }
  if (active_.empty()) throw InputError("--agents: no agent has a template to work on");
  if (!target_.skill_hints.empty())
    progress_.message(
        fmt::format("warm start: {} skill(s) from earlier runs as first points "
                    "and priors",
                    target_.skill_hints.size()));
  bandit_ = std::make_unique<BudgetBandit>(active_, BanditOptions{.seed = options_.seed});
}

OptimizeSummary OptimizeRun::execute() {
  // Baseline first: it is what speedups are measured against.
  if (target_.baseline)
    uninterrupted([this] { measure_baseline(); });
  else
    progress_.message(
        "no baseline solution: the speedups below are relative to the first passing candidate, "
        "not to PyTorch");
  std::string stop_reason;
  if (stop_signal() == 0) stop_reason = search();
  for (const auto& agent : agents_) db_.save_agent_state(run_id_, agent->name(), agent->summary());
  std::optional<OptimizeSummary> summary;
  if (stop_signal() == 0 && uninterrupted([&] { summary = summarize(stop_reason); })) {
    db_.save_agent_state(run_id_, "orchestrator", summary_to_json(*summary));
    db_.finish_run(run_id_, RunStatus::Finished);
    return std::move(*summary);
  }
  summary = search_summary(interruption_text(stop_signal()));
  summary->interrupted_by = stop_signal();
  db_.finish_run(run_id_, RunStatus::Stopped);
  return std::move(*summary);
}

void OptimizeRun::post(BoardKind kind, const std::string& agent, const std::string& text,
                       const std::vector<int64_t>& evidence) {
  if (board_posted_++ >= board_stored_) {
    db_.append_board(run_id_, kind, text, evidence);
    progress_.message(fmt::format("board: {}", text));
  }
  last_board_[agent] = text;
}

// A candidate row for the next seq: the stored one when replaying (it must be what was proposed
// then), else a new one written after its solution object.
int64_t OptimizeRun::candidate_for(const std::string& agent, std::optional<int64_t> parent,
                                   std::vector<int64_t> inspired, const Solution* solution,
                                   const std::string& template_name, const KnobPoint& point,
                                   const std::string& note) {
  const int64_t seq = next_seq_++;
  if (seq < static_cast<int64_t>(stored_.size())) {
    const Candidate& stored = stored_[seq];
    const KnobPoint stored_point = knob_point_from_json(stored.knob_point);
    if (stored.agent != agent || stored.template_name != template_name || stored_point != point)
      throw InputError(fmt::format(
          "--resume: run {} diverged at candidate {}: stored {} {} {}, now {} {} {} (did the "
          "template library or kernelarc change since?)",
          run_id_, seq, stored.agent, stored.template_name, format_knob_point(stored_point), agent,
          template_name, format_knob_point(point)));
    return stored.id;
  }
  NewCandidate candidate;
  candidate.agent = agent;
  candidate.parent_id = parent;
  candidate.inspired_by = std::move(inspired);
  // A code candidate without a program stores null: its synthesis record says why.
  candidate.solution_key =
      objects_.put(solution ? solution_to_json(*solution).dump() : std::string("null"));
  candidate.template_name = template_name;
  candidate.knob_point = knob_point_to_json(point);
  candidate.note = note;
  return db_.add_candidate(run_id_, candidate);
}

std::optional<Measurement> OptimizeRun::stored_measurement(int64_t candidate_id) {
  const auto evaluation = db_.evaluation_of(candidate_id);
  if (!evaluation) return std::nullopt;
  const auto blob = nlohmann::json::parse(objects_.get(evaluation->traces_key));
  return measurement_from_json(blob.at("measurement"),
                               fmt::format("evaluation of candidate {}", candidate_id));
}

void OptimizeRun::record_evaluation(int64_t candidate_id, const Measurement& measurement,
                                    const std::vector<Trace>& traces, const std::string& where) {
  OrderedJson blob;
  blob["measurement"] = OrderedJson::parse(measurement_to_json(measurement).dump());
  blob["traces"] = OrderedJson::array();
  for (const Trace& trace : traces) blob["traces"].push_back(trace_to_json(trace));
  if (!where.empty()) blob["where"] = where;
  Evaluation evaluation;
  evaluation.status = status_name(measurement.status);
  evaluation.traces_key = objects_.put(blob.dump());
  if (measurement.passed) {
    evaluation.median_ms = geometric_mean_ms(measurement);
    evaluation.ci_low_ms = geometric_mean_ms(measurement, &WorkloadTime::ci_low_ms);
    evaluation.ci_high_ms = geometric_mean_ms(measurement, &WorkloadTime::ci_high_ms);
    evaluation.sol_score = sol_fraction(measurement);
  }
  db_.record_evaluation(candidate_id, evaluation);
}

std::optional<std::string> OptimizeRun::stop_proposing(double elapsed_seconds) const {
  if (proposed_ >= options_.budget)
    return fmt::format("budget: {} candidates evaluated", options_.budget);
  if (options_.wall_time_s && elapsed_seconds > *options_.wall_time_s)
    return fmt::format("wall time: {:.0f} s", *options_.wall_time_s);
  return synthesis_budget_spent();
}

// The search: keep the queue full of proposals, submit them to the pool as it has room, store
// each evaluation when it finishes and apply the oldest measured one before the next proposal
// (orchestrator.h, "Determinism").
std::string OptimizeRun::search() {
  const auto started = std::chrono::steady_clock::now();
  std::string stop_reason = fmt::format("budget: {} candidates evaluated", options_.budget);
  bool proposing = true;
  uninterrupted([this] { evaluator_.prepare(); });
  if (options_.build_ahead > 0) builds_ = std::make_unique<TaskPool>(usable_cpus().size());
  const auto window = static_cast<std::size_t>(options_.window(code_space_ != nullptr));
  while (true) {
    if (stop_signal() != 0) {
      finish_in_flight();
      break;
    }
    while (proposing && queue_.size() < window) {
      if (const auto reason = stop_proposing(seconds_since(started))) {
        stop_reason = *reason;
        proposing = false;
        break;
      }
      auto pending = propose_next();
      if (!pending) {
        stop_reason = "exhausted: no agent finds a new valid point";
        proposing = false;
        break;
      }
      ++proposed_;
      enqueue(std::move(*pending));
    }
    take_programs();
    submit_ready();
    if (queue_.empty()) break;
    if (!queue_.front().measurement) {
      wait_for_work();
      continue;
    }
    complete(queue_.front());
    queue_.pop_front();
  }
  search_seconds_ = seconds_since(started);
  return stop_reason;
}

int OptimizeRun::stop_signal() const {
  if (interrupted_ != 0) return interrupted_;
  return stop_ != nullptr ? stop_->load(std::memory_order_relaxed) : 0;
}

bool OptimizeRun::uninterrupted(const std::function<void()>& step) {
  try {
    step();
    return true;
  } catch (const Interrupted& interrupted) {
    interrupted_ = interrupted.signal();
    return false;
  }
}

// What is in flight is measured already, or nearly: it is kept. The queued candidates that were
// never submitted, and those whose evaluation the stop cut short, stay proposed in the store,
// and a resume measures them.
void OptimizeRun::finish_in_flight() {
  while (in_flight_ > 0) take_from_pool();
  while (!queue_.empty() && queue_.front().measurement) {
    complete(queue_.front());
    queue_.pop_front();
  }
}

}  // namespace kernelarc

// Proposing: the agent the bandit picks, its proposal, and for code candidates the request to the
// code synthesizer and its answer.
#include <algorithm>

#include <fmt/format.h>

#include "optimize/code_moves.h"
#include "optimize/conclusions.h"
#include "optimize/optimize_run.h"

namespace kernelarc {

// The next proposal of the agent the bandit picks; a point another agent already proposed is not
// measured again, its result is shared.
std::optional<OptimizeRun::Pending> OptimizeRun::propose_next() {
  const std::size_t max_attempts = 64 * agents_.size() + 64;
  for (std::size_t attempt = 0; attempt < max_attempts; ++attempt) {
    if (exhausted_.size() == agents_.size()) return std::nullopt;
    const std::string name = bandit_->next_agent();
    const auto index =
        static_cast<std::size_t>(std::find(active_.begin(), active_.end(), name) - active_.begin());
    if (exhausted_.count(name)) {
      bandit_->record(name, false, 0);
      continue;
    }
    Agent& agent = *agents_[index];
    auto proposed = agent.propose(snapshot());
    if (!proposed) {
      exhausted_.insert(name);
      progress_.message(fmt::format("agent {}: no new valid point left", name));
      continue;
    }
    const Proposal& proposal = proposed->proposal;
    const int node = agent.add(proposal);
    std::optional<int64_t> parent;
    if (proposal.parent) parent = candidate_of_node_.at({index, *proposal.parent});
    std::vector<int64_t> inspired = proposed->inspired_by_candidates;
    for (int other : proposal.inspired_by)
      inspired.push_back(candidate_of_node_.at({index, other}));
    if (proposed->redirect) post(BoardKind::Redirect, name, *proposed->redirect, inspired);
    const bool code = is_code(proposal.template_name);
    // Programs are their agent's own: two agents' revision 3 are different code.
    const std::string key = point_key(
        code ? proposal.template_name + "@" + name : proposal.template_name, proposal.point);
    if (const auto found = known_.find(key); found != known_.end()) {
      share_known(found->second, agent, index, node, proposal.template_name);
      continue;
    }
    Pending pending;
    pending.agent = index;
    pending.node = node;
    pending.key = key;
    if (code) {
      write_program(pending, proposal, agent, parent, inspired);
    } else {
      pending.solution =
          bound_.at(proposal.template_name)->instantiate(proposal.point, target_.extra_files);
      pending.candidate_id =
          candidate_for(name, parent, inspired, &pending.solution, proposal.template_name,
                        proposal.point, proposed->note.value_or(""));
    }
    pending.seq = next_seq_ - 1;
    known_[key] = {pending.candidate_id, name,         proposal.template_name,
                   proposal.point,       std::nullopt, {{index, node}}};
    key_of_candidate_[pending.candidate_id] = key;
    candidate_of_node_[{index, node}] = pending.candidate_id;
    node_of_candidate_[pending.candidate_id] = {index, node};
    return pending;
  }
  return std::nullopt;
}

void OptimizeRun::share_known(Known& known, Agent& agent, std::size_t index, int node,
                              const std::string& template_name) {
  candidate_of_node_[{index, node}] = known.candidate_id;
  if (known.measurement)
    agent.record(node, result_of(*known.measurement, template_name),
                 suggestions_at(*known.measurement, target_.largest_workload));
  else
    known.waiters.push_back({index, node});
}

SynthesisRequest OptimizeRun::synthesis_request(const Proposal& proposal, const Agent& agent,
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
  if (request.move == SynthesisMove::Draft && baseline_)
    if (auto context = context_of(baseline_candidate_))
      request.inspirations.push_back(std::move(*context));
  request.seed = options_.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(next_seq_);
  request.knowledge = knowledge_for_request(target_.knowledge, request.seed);
  for (const Conclusion& conclusion : conclusions_)
    request.board.push_back(conclusion_text(conclusion, target_.problem->definition.name,
                                            target_.workload_class, evaluator_.device_name()));
  request.recent_failures.assign(recent_failures_.begin(), recent_failures_.end());
  return request;
}

// A code candidate's program: read back when replaying, else asked of the synthesizer on a
// thread of its own. The candidate row is written now, without a program (null); the program
// and the synthesis record follow when the answer is taken (accept_program). A stored row
// without either was asked before the run stopped and never answered: it is asked again.
void OptimizeRun::write_program(Pending& pending, const Proposal& proposal, const Agent& agent,
                                std::optional<int64_t> parent,
                                const std::vector<int64_t>& inspired) {
  std::optional<SynthesisRequest> request;
  if (next_seq_ < static_cast<int64_t>(stored_.size())) {
    const Candidate& stored = stored_[next_seq_];
    const OrderedJson json = OrderedJson::parse(objects_.get(stored.solution_key));
    pending.synthesis = db_.synthesis_of(stored.id);
    if (!json.is_null())
      pending.solution =
          parse_solution(json, fmt::format("candidate {}'s solution", stored.id), {});
    else if (pending.synthesis)
      pending.synthesis_failure = pending.synthesis->failure;
    else
      request = synthesis_request(proposal, agent, parent, inspired);
  } else {
    request = synthesis_request(proposal, agent, parent, inspired);
  }
  const bool has_program = !request && !pending.synthesis_failure;
  pending.candidate_id =
      candidate_for(agent.name(), parent, inspired, has_program ? &pending.solution : nullptr,
                    proposal.template_name, proposal.point);
  if (request)
    ask(pending, std::move(*request));
  else if (has_program)
    programs_[pending.candidate_id] = pending.solution;
}

void OptimizeRun::ask(Pending& pending, SynthesisRequest request) {
  if (!requests_)
    requests_ = std::make_unique<TaskPool>(static_cast<std::size_t>(options_.synthesis_parallel));
  pending.move = request.move;
  pending.answer = std::make_shared<SynthesisOutcome>();
  pending.program =
      requests_->run([synthesizer = target_.code_synthesizer, request = std::move(request),
                      answer = pending.answer] { *answer = synthesizer->synthesize(request); });
}

// The program is stored before the record that says the synthesizer answered, so that a run
// stopped in between finds the program on --resume rather than a failure without a reason.
void OptimizeRun::accept_program(Pending& pending) {
  pending.program.get();  // what the synthesizer threw (an unusable configuration) ends the run
  SynthesisOutcome outcome = std::move(*pending.answer);
  pending.answer.reset();
  nlohmann::json exchanges = nlohmann::json::array();
  for (const SynthesisExchange& exchange : outcome.exchanges)
    exchanges.push_back({{"model", exchange.model},
                         {"request", exchange.request},
                         {"response", exchange.response}});
  Synthesis record{code_template_,
                   outcome.exchanges.empty() ? "" : outcome.exchanges.back().model,
                   objects_.put(nlohmann::json{
                       {"move", synthesis_move_name(pending.move)},
                       {"failure", outcome.failure},
                       {"exchanges",
                        exchanges}}.dump()),
                   outcome.failure,
                   outcome.usage.input_tokens,
                   outcome.usage.output_tokens,
                   outcome.usage.cost_usd,
                   outcome.usage.from_cache};
  if (outcome.solution) {
    pending.solution = std::move(*outcome.solution);
    db_.set_candidate_solution(pending.candidate_id,
                               objects_.put(solution_to_json(pending.solution).dump()));
    programs_[pending.candidate_id] = pending.solution;
  } else {
    pending.synthesis_failure = outcome.failure;
  }
  pending.transport_failure = outcome.transport_failure;
  db_.record_synthesis(pending.candidate_id, record);
  pending.synthesis = std::move(record);
}

void OptimizeRun::add_synthesis_totals(const Synthesis& record) {
  ++synthesis_.calls;
  synthesis_.cached += record.from_cache;
  synthesis_.failures += !record.failure.empty();
  synthesis_.input_tokens += record.input_tokens;
  synthesis_.output_tokens += record.output_tokens;
  synthesis_.cost_usd += record.cost_usd;
}

// Why the synthesizer may not be asked again, or nullopt.
std::optional<std::string> OptimizeRun::synthesis_budget_spent() const {
  const int64_t tokens = synthesis_.input_tokens + synthesis_.output_tokens;
  if (options_.max_synthesis_tokens && tokens >= *options_.max_synthesis_tokens)
    return fmt::format("synthesis budget: {} tokens spent (limit {})", tokens,
                       *options_.max_synthesis_tokens);
  if (options_.max_synthesis_cost_usd && synthesis_.cost_usd >= *options_.max_synthesis_cost_usd)
    return fmt::format("synthesis budget: ${:.4f} spent (limit ${:.4f})", synthesis_.cost_usd,
                       *options_.max_synthesis_cost_usd);
  return std::nullopt;
}

// What the code synthesizer is told about a candidate it builds on.
std::optional<CandidateContext> OptimizeRun::context_of(int64_t candidate_id) {
  // A program is shown once its result is applied: whether it is written yet is up to timing.
  if (candidate_id != baseline_candidate_ && is_code(known_of(candidate_id).template_name) &&
      !measurement_of_candidate(candidate_id))
    return std::nullopt;
  auto solution = solution_of(candidate_id);
  if (!solution) return std::nullopt;
  CandidateContext context;
  context.candidate_id = candidate_id;
  context.solution = std::move(*solution);
  // Only a result applied already: one stored but not yet applied (a pool finished it early)
  // would make the request depend on timing.
  const auto measurement = measurement_of_candidate(candidate_id);
  if (!measurement) return context;
  context.status = measurement->status;
  context.results = results_text(*measurement, reference_.value_or(std::map<std::string, double>{}),
                                 target_.problem->workloads);
  if (!measurement->passed) context.log = measurement->log;
  if (const auto evaluation = db_.evaluation_of(candidate_id)) {
    const OrderedJson blob = OrderedJson::parse(objects_.get(evaluation->traces_key));
    if (blob.contains("traces"))
      context.diagnosis = diagnosis_at(blob.at("traces"), target_.largest_workload);
  }
  return context;
}

}  // namespace kernelarc

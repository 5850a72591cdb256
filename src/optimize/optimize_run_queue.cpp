// Measuring: the baseline first on the evaluator, then the queued candidates through the pool,
// each stored as soon as it finishes; what a result changes (the incumbent, the agents' trees,
// the bandit, the board), applied in the order the candidates were proposed.
#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

#include "optimize/conclusions.h"
#include "optimize/optimize_run.h"

namespace kernelarc {

namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

/// What the diagnosis adds to a favoured agent's bandit score: about one verified improvement.
constexpr double kAdviceBonus = 0.5;

/// How long the search waits on the pool, or on a request, while programs are being written:
/// short beside an LLM's answer or a measurement, long beside a turn of the loop.
constexpr std::chrono::milliseconds kWritingPoll{20};

}  // namespace

void OptimizeRun::measure_baseline() {
  const int64_t id = candidate_for("baseline", std::nullopt, {}, &*target_.baseline, "", {});
  const auto measure_start = Clock::now();
  std::optional<Measurement> stored = stored_measurement(id);
  const bool replayed = stored.has_value();
  if (!stored) {
    const std::vector<Trace> traces = evaluator_.evaluate(*target_.baseline);
    stored = measurement_of(traces);
    record_evaluation(id, *stored, traces);
  }
  const Measurement& measurement = *stored;
  const Seconds evaluation = Clock::now() - measure_start;
  baseline_candidate_ = id;
  if (measurement.passed) {
    baseline_ = measurement;
    reference_ = reference_times(measurement);
  } else {
    progress_.message(
        fmt::format("baseline {} failed ({}: {}); speedups are relative to the "
                    "first passing candidate",
                    target_.baseline->name, status_name(measurement.status), measurement.log));
  }
  CandidateEvent event{0,           id,
                       "baseline",  "baseline " + target_.baseline->name,
                       measurement, measurement.passed ? std::optional<double>(1.0) : std::nullopt,
                       false,       replayed,
                       0.0,         evaluation.count(),
                       ""};
  progress_.candidate(view(), event);
}

void OptimizeRun::enqueue(Pending pending) {
  pending.measurement = stored_measurement(pending.candidate_id);
  pending.replayed = pending.measurement.has_value();
  if (!pending.program.valid()) prepare_measurement(pending);
  queue_.push_back(std::move(pending));
}

void OptimizeRun::prepare_measurement(Pending& pending) {
  if (pending.measurement) return;
  if (pending.synthesis_failure) {
    Measurement failed;
    failed.passed = false;
    failed.status = EvalStatus::SynthesisFailed;
    failed.log = *pending.synthesis_failure;
    record_evaluation(pending.candidate_id, failed, {});
    pending.measurement = std::move(failed);
    return;
  }
  if (builds_) {
    // The job gets its own copy: the pending entry may move within the queue.
    CandidateEvaluator* evaluator = &evaluator_;
    pending.build =
        builds_->run([evaluator, solution = pending.solution] { evaluator->prebuild(solution); });
  }
}

void OptimizeRun::take_programs() {
  for (Pending& pending : queue_) {
    if (!pending.program.valid() ||
        pending.program.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      continue;
    accept_program(pending);
    prepare_measurement(pending);
  }
}

void OptimizeRun::submit_ready() {
  for (Pending& pending : queue_) {
    if (in_flight_ >= pool_.capacity()) return;
    if (pending.submitted || pending.measurement || pending.program.valid()) continue;
    const auto wait_start = Clock::now();
    if (pending.build.valid()) pending.build.wait();
    pending.submitted_at = Clock::now();
    pending.build_wait_seconds = Seconds(pending.submitted_at - wait_start).count();
    pool_.submit(static_cast<uint64_t>(pending.candidate_id), pending.solution);
    pending.submitted = true;
    ++in_flight_;
  }
}

// While programs are being written, neither the pool nor a request is waited on for long: the
// first to finish is taken at the next turn of the search loop.
void OptimizeRun::wait_for_work() {
  const auto writing = std::find_if(queue_.begin(), queue_.end(),
                                    [](const Pending& pending) { return pending.program.valid(); });
  if (writing == queue_.end()) {
    if (in_flight_ == 0) throw std::logic_error("OptimizeRun: nothing in flight or being written");
    take_from_pool();
  } else if (in_flight_ == 0) {
    writing->program.wait_for(kWritingPoll);
  } else {
    take_from_pool(kWritingPoll);
  }
}

void OptimizeRun::take_from_pool(std::optional<std::chrono::milliseconds> wait) {
  std::optional<EvaluationPool::Done> done;
  // An interrupted evaluation comes back as an exception, without its ticket: its candidate
  // stays submitted and unmeasured, and the search loop, seeing the stop, receives the others.
  if (!uninterrupted([&] { done = wait ? pool_.next_within(*wait) : pool_.next(); })) --in_flight_;
  if (done) receive(std::move(*done));
}

void OptimizeRun::receive(EvaluationPool::Done done) {
  const auto found = std::find_if(queue_.begin(), queue_.end(), [&](const Pending& pending) {
    return pending.submitted && !pending.measurement &&
           static_cast<uint64_t>(pending.candidate_id) == done.ticket;
  });
  if (found == queue_.end())
    throw std::logic_error(fmt::format("evaluation pool: ticket {} is not in flight (from {})",
                                       done.ticket, done.where));
  --in_flight_;
  ++measured_;
  Measurement measurement = measurement_of(done.traces);
  record_evaluation(found->candidate_id, measurement, done.traces, done.where);
  found->measurement = std::move(measurement);
  found->where = std::move(done.where);
  found->evaluation_seconds = Seconds(Clock::now() - found->submitted_at).count();
}

void OptimizeRun::complete(Pending& pending) {
  const Measurement& measurement = *pending.measurement;
  ++evaluated_;
  if (pending.synthesis) add_synthesis_totals(*pending.synthesis);
  passed_ += measurement.passed;
  Known& known = known_.at(pending.key);
  known.measurement = measurement;
  if (!pending.transport_failure) remember_failure(known, measurement);
  const CandidateResult result = result_of(measurement, known.template_name);
  double gain = 0;
  const bool new_incumbent = update_incumbent(result, pending.candidate_id, gain);
  if (new_incumbent) advise_from(measurement);
  for (const auto& [agent, node] : known.waiters)
    agents_[agent]->record(node, result, suggestions_at(measurement, target_.largest_workload));
  known.waiters.clear();
  Agent& proposer = *agents_[pending.agent];
  bandit_->record(proposer.name(), new_incumbent && gain > 0, gain);
  conclude_from_parent(proposer, pending.agent, pending.node, pending.candidate_id, measurement);
  if (!pending.replayed) db_.save_agent_state(run_id_, proposer.name(), proposer.summary());
  CandidateEvent event{pending.seq,
                       pending.candidate_id,
                       proposer.name(),
                       label_of(known),
                       measurement,
                       result.fitness,
                       new_incumbent,
                       pending.replayed,
                       pending.build_wait_seconds,
                       pending.evaluation_seconds,
                       pending.where};
  progress_.candidate(view(), event);
}

// A failed program's reason goes into the synthesizer's next prompt.
void OptimizeRun::remember_failure(const Known& known, const Measurement& measurement) {
  if (measurement.passed || !is_code(known.template_name)) return;
  // The prompt builder trims the log; a synthesis failure is the synthesizer's own news. No
  // candidate id: it is workspace-wide, means nothing to the model and differs between a run and
  // its replay.
  recent_failures_.push_back(
      fmt::format("{}: {}: {}", label_of(known), status_name(measurement.status), measurement.log));
  if (recent_failures_.size() > 3) recent_failures_.pop_front();
}

bool OptimizeRun::update_incumbent(const CandidateResult& result, int64_t candidate_id,
                                   double& gain) {
  if (!result.passed) return false;
  if (incumbent_ && !improves_beyond_noise(*result.fitness, result.noise, incumbent_fitness_,
                                           incumbent_noise_, options_.min_gain))
    return false;
  gain = incumbent_ ? *result.fitness / incumbent_fitness_ - 1 : 0;
  incumbent_ = candidate_id;
  incumbent_fitness_ = *result.fitness;
  incumbent_noise_ = result.noise;
  return true;
}

void OptimizeRun::conclude_from_parent(const Agent& proposer, std::size_t agent_index, int node_id,
                                       int64_t candidate_id, const Measurement& measurement) {
  const SearchNode& node = proposer.tree().node(node_id);
  // "Changing REVISION from 3 to 11" says nothing another agent could use.
  if (!node.parent || is_code(node.template_name)) return;
  const int64_t parent_id = candidate_of_node_.at({agent_index, *node.parent});
  const Known& parent = known_of(parent_id);
  if (!parent.measurement) return;
  auto conclusion = conclude(node.template_name, parent_id, parent.point, *parent.measurement,
                             candidate_id, node.point, measurement);
  if (!conclusion) return;
  const std::string key = node.template_name + ":" + changes_text(conclusion->changes);
  if (!concluded_.insert(key).second) return;
  post(BoardKind::Conclusion, proposer.name(),
       conclusion_text(*conclusion, target_.problem->definition.name, target_.workload_class,
                       evaluator_.device_name()),
       {parent_id, candidate_id});
  conclusions_.push_back(std::move(*conclusion));
}

CandidateResult OptimizeRun::result_of(const Measurement& measurement,
                                       const std::string& template_name) {
  CandidateResult result;
  if (!measurement.passed) return result;
  if (!reference_) reference_ = reference_times(measurement);
  const Fitness fitness = fitness_of(measurement, *reference_);
  result.passed = true;
  result.fitness = fitness.value;
  result.noise = fitness.noise;
  const auto index = std::distance(bound_.begin(), bound_.find(template_name));
  result.features = {{"template", index}};
  if (measurement.occupancy)
    result.features["occupancy_quartile"] =
        std::min<int64_t>(3, static_cast<int64_t>(*measurement.occupancy * 4));
  if (const auto fraction = sol_fraction(measurement))
    result.features["sol_quartile"] = std::min<int64_t>(3, static_cast<int64_t>(*fraction * 4));
  return result;
}

// The diagnosis of the best candidate at the largest workload steers turns towards the agents
// whose strategy addresses its bottleneck (the bandit's advice).
void OptimizeRun::advise_from(const Measurement& best) {
  const auto largest = best.times.find(target_.largest_workload);
  if (largest == best.times.end()) return;
  std::vector<std::string> favoured;
  for (const std::string& name : strategies_for_bottleneck(largest->second.bottleneck))
    if (std::find(active_.begin(), active_.end(), name) != active_.end()) favoured.push_back(name);
  bandit_->advise(favoured, kAdviceBonus);
}

}  // namespace kernelarc

// Measuring: the baseline first, then each queued candidate when its turn comes; what a result
// changes (the incumbent, the agents' trees, the bandit, the board).
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "optimize/conclusions.h"
#include "optimize/optimize_run.h"

namespace kernelarc {

namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

/// What the diagnosis adds to a favoured agent's bandit score: about one verified improvement.
constexpr double kAdviceBonus = 0.5;

}  // namespace

void OptimizeRun::measure_baseline() {
  bool replayed = false;
  const int64_t id = candidate_for("baseline", std::nullopt, {}, &*target_.baseline, "", {});
  const auto measure_start = Clock::now();
  Measurement measurement = measure(id, *target_.baseline, std::nullopt, replayed);
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
                       0.0,         evaluation.count()};
  progress_.candidate(view(), event);
}

void OptimizeRun::complete(Pending& pending) {
  const auto wait_start = Clock::now();
  if (pending.build.valid()) pending.build.wait();
  const auto measure_start = Clock::now();
  bool replayed = false;
  const Measurement measurement =
      measure(pending.candidate_id, pending.solution, pending.synthesis_failure, replayed);
  const Seconds build_wait = measure_start - wait_start;
  const Seconds evaluation = Clock::now() - measure_start;
  ++evaluated_;
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
  if (!replayed) db_.save_agent_state(run_id_, proposer.name(), proposer.summary());
  CandidateEvent event{pending.seq,        pending.candidate_id, proposer.name(), label_of(known),
                       measurement,        result.fitness,       new_incumbent,   replayed,
                       build_wait.count(), evaluation.count()};
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
  if (!node.parent) return;
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

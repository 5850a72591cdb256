// What the run shows: the progress view, the agents' shared view, and lookups of a candidate's
// point, solution and measurement.
#include <algorithm>

#include <fmt/format.h>

#include "optimize/optimize_run.h"

namespace kernelarc {

ProgressView OptimizeRun::view() const {
  ProgressView view;
  view.run_id = run_id_;
  view.budget = options_.budget;
  view.evaluated = evaluated_;
  view.synthesis = synthesis_;
  if (incumbent_) {
    const Measurement& best = *known_of(*incumbent_).measurement;
    view.best_fitness = incumbent_fitness_;
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
  for (const auto& agent : agents_) {
    AgentLine line{agent->name(), agent->strategy().name, static_cast<int>(agent->tree().size()),
                   std::nullopt, ""};
    if (const auto best = agent->best()) line.best_fitness = agent->tree().node(*best).fitness;
    if (const auto board = last_board_.find(agent->name()); board != last_board_.end())
      line.last_board = board->second;
    view.agents.push_back(std::move(line));
  }
  return view;
}

SharedView OptimizeRun::snapshot() const {
  SharedView shared;
  shared.conclusions = conclusions_;
  for (std::size_t i = 0; i < agents_.size(); ++i) {
    const Agent& agent = *agents_[i];
    const auto best = agent.best();
    if (!best) continue;
    const SearchNode& node = agent.tree().node(*best);
    shared.bests.push_back({agent.name(), candidate_of_node_.at({i, *best}), node.template_name,
                            node.point, *node.fitness, node.noise});
  }
  std::stable_sort(shared.bests.begin(), shared.bests.end(),
                   [](const AgentBest& a, const AgentBest& b) { return a.fitness > b.fitness; });
  return shared;
}

bool OptimizeRun::is_code(const std::string& template_name) const {
  return code_space_ && template_name == code_template_;
}

std::string OptimizeRun::label_of(const Known& known) const {
  if (is_code(known.template_name))
    return fmt::format("{} program {} of {}", known.template_name, format_knob_point(known.point),
                       known.agent);
  return fmt::format("{} {}", known.template_name, format_knob_point(known.point));
}

const OptimizeRun::Known& OptimizeRun::known_of(int64_t candidate_id) const {
  return known_.at(key_of_candidate_.at(candidate_id));
}

// The solution a candidate ran: the baseline, a program, or a template instance.
std::optional<Solution> OptimizeRun::solution_of(int64_t candidate_id) const {
  if (candidate_id == baseline_candidate_ && target_.baseline) return *target_.baseline;
  if (const auto program = programs_.find(candidate_id); program != programs_.end())
    return program->second;
  const Known& known = known_of(candidate_id);
  const auto bound = bound_.find(known.template_name);
  if (bound == bound_.end()) return std::nullopt;  // a program that was never written
  return bound->second->instantiate(known.point, target_.extra_files);
}

std::optional<Measurement> OptimizeRun::measurement_of_candidate(int64_t candidate_id) const {
  if (candidate_id == baseline_candidate_) return baseline_;
  return known_of(candidate_id).measurement;
}

}  // namespace kernelarc

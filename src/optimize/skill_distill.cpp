#include "optimize/skill_distill.h"

#include <algorithm>

#include <fmt/format.h>

#include "optimize/conclusions.h"
#include "optimize/shape_class.h"

namespace kernelarc {

namespace {

SkillObservation observation_of(const Conclusion& conclusion, const OptimizeSummary& summary,
                                const SkillCondition& condition) {
  SkillObservation observation;
  observation.family = condition.family;
  observation.shape_class = condition.shape_class;
  observation.device = condition.device;
  observation.template_name = conclusion.template_name;
  for (const KnobChange& change : conclusion.changes)
    observation.changes.push_back(
        {change.knob, knob_value_to_json(change.from), knob_value_to_json(change.to)});
  observation.effect = {conclusion.speedup.value, conclusion.speedup.low, conclusion.speedup.high};
  observation.run_id = summary.run_id;
  observation.before_candidate = conclusion.before_candidate;
  observation.after_candidate = conclusion.after_candidate;
  observation.problem = condition.problem;
  return observation;
}

}  // namespace

std::vector<SkillObservation> skill_observations(const OptimizeSummary& summary,
                                                 const SkillCondition& condition) {
  std::vector<SkillObservation> observations;
  for (const Conclusion& conclusion : summary.conclusions)
    observations.push_back(observation_of(conclusion, summary, condition));
  if (summary.winner_route)
    observations.push_back(observation_of(*summary.winner_route, summary, condition));
  return observations;
}

std::vector<SkillHint> skill_hints(SkillStore& store, const SkillCondition& condition,
                                   const std::vector<std::string>& templates, int limit) {
  std::vector<SkillHint> hints;
  for (const std::string& template_name : templates) {
    for (const Skill& skill : store.find({condition.family, condition.device, template_name, {}})) {
      if (skill.rank() <= 0) continue;
      nlohmann::json changes = nlohmann::json::array();
      for (const SkillKnobChange& change : skill.changes)
        changes.push_back({{"knob", change.knob}, {"from", change.from}, {"to", change.to}});
      hints.push_back({skill.id, skill.template_name,
                       knob_changes_from_json(changes, fmt::format("skill {}", skill.id)),
                       skill.rank() * shape_similarity(skill.shape_class, condition.shape_class)});
    }
  }
  std::stable_sort(hints.begin(), hints.end(),
                   [](const SkillHint& a, const SkillHint& b) { return a.weight > b.weight; });
  if (hints.size() > static_cast<std::size_t>(limit)) hints.resize(static_cast<std::size_t>(limit));
  return hints;
}

}  // namespace kernelarc

// Between a run and the skill store: what a finished run teaches (its board's conclusions and
// the winner's route from its template's default point), and what earlier runs offer a new one
// (the active skills for its family, device and templates, as warm-start hints).
#pragma once

#include <string>
#include <vector>

#include "kb/skill_store.h"
#include "optimize/orchestrator.h"
#include "optimize/skill_hint.h"

namespace kernelarc {

/// Where a run's skills apply.
struct SkillCondition {
  std::string family;       ///< the problem's op_family
  std::string shape_class;  ///< the evaluated workloads' sizes (shape_class_of)
  std::string device;       ///< the device's name ("cpu", "NVIDIA H200")
  std::string problem;      ///< the definition's name, for the evidence
};

/// One observation per board conclusion, and one for the winner's route.
std::vector<SkillObservation> skill_observations(const OptimizeSummary& summary,
                                                 const SkillCondition& condition);

/// The active skills of the family on the device for these templates, strongest first, at
/// most `limit`, as hints. Weight = the skill's rank x shape_similarity of its shape class to
/// the condition's, so that skills learned on the closest shapes come first; equal weights keep
/// the order of `templates`, then the store's (by rank, then id). Skills that do not rank above
/// 0 are left out.
std::vector<SkillHint> skill_hints(SkillStore& store, const SkillCondition& condition,
                                   const std::vector<std::string>& templates, int limit = 8);

}  // namespace kernelarc

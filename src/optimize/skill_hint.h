// Skills retrieved for a run (warm start): knob changes that made this kind of problem faster on
// this device before, and how much to trust them. Agents start from the template's default point
// with the changes applied, and score their proposals' agreement with them as MCTS priors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimize/shared_view.h"

namespace kernelarc {

struct SkillHint {
  int64_t skill_id = 0;
  std::string template_name;
  std::vector<KnobChange> changes;
  double weight = 0;  ///< confidence x ln(effect) x shape similarity: > 0, higher is stronger
};

/// Stored in the run's config so that a resume reuses the hints the run started with.
nlohmann::json skill_hints_to_json(const std::vector<SkillHint>& hints);
/// InputError naming `where` on a malformed entry.
std::vector<SkillHint> skill_hints_from_json(const nlohmann::json& json, const std::string& where);

/// `point` with the hints' changes applied, weakest first so that the strongest wins a knob both
/// set; changes to knobs the point does not have are skipped.
KnobPoint apply_hints(KnobPoint point, const std::vector<const SkillHint*>& hints);

/// The prior of a proposal at `point`: 0.1 plus 0.9 x the weight share of the hints whose every
/// target value the point holds.
double hint_prior(const KnobPoint& point, const std::vector<const SkillHint*>& hints);

}  // namespace kernelarc

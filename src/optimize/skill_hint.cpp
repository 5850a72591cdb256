#include "optimize/skill_hint.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "optimize/conclusions.h"

namespace kernelarc {

nlohmann::json skill_hints_to_json(const std::vector<SkillHint>& hints) {
  nlohmann::json json = nlohmann::json::array();
  for (const SkillHint& hint : hints)
    json.push_back({{"skill", hint.skill_id},
                    {"template", hint.template_name},
                    {"changes", knob_changes_to_json(hint.changes)},
                    {"weight", hint.weight}});
  return json;
}

std::vector<SkillHint> skill_hints_from_json(const nlohmann::json& json, const std::string& where) {
  std::vector<SkillHint> hints;
  try {
    for (const auto& entry : json) {
      hints.push_back({entry.at("skill").get<int64_t>(), entry.at("template").get<std::string>(),
                       knob_changes_from_json(entry.at("changes"), where),
                       entry.at("weight").get<double>()});
    }
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("{}: skill hints: {}", where, error.what()));
  }
  return hints;
}

KnobPoint apply_hints(KnobPoint point, const std::vector<const SkillHint*>& hints) {
  std::vector<const SkillHint*> weakest_first = hints;
  std::stable_sort(weakest_first.begin(), weakest_first.end(),
                   [](const SkillHint* a, const SkillHint* b) { return a->weight < b->weight; });
  for (const SkillHint* hint : weakest_first)
    for (const KnobChange& change : hint->changes)
      if (const auto knob = point.find(change.knob); knob != point.end()) knob->second = change.to;
  return point;
}

double hint_prior(const KnobPoint& point, const std::vector<const SkillHint*>& hints) {
  double total = 0, held = 0;
  for (const SkillHint* hint : hints) {
    total += hint->weight;
    const bool holds = std::all_of(hint->changes.begin(), hint->changes.end(), [&](const auto& c) {
      const auto knob = point.find(c.knob);
      return knob != point.end() && knob->second == c.to;
    });
    if (holds) held += hint->weight;
  }
  return total > 0 ? 0.1 + 0.9 * held / total : 0.1;
}

}  // namespace kernelarc

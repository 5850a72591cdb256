#include "optimize/conclusions.h"

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {

std::vector<KnobChange> knob_changes(const KnobPoint& from, const KnobPoint& to) {
  std::vector<KnobChange> changes;
  for (const auto& [knob, value] : to) {
    const auto before = from.find(knob);
    if (before == from.end() || before->second != value)
      changes.push_back({knob, before == from.end() ? KnobValue{} : before->second, value});
  }
  return changes;
}

std::optional<Conclusion> conclude(const std::string& template_name, int64_t parent_candidate,
                                   const KnobPoint& parent_point, const Measurement& parent,
                                   int64_t child_candidate, const KnobPoint& child_point,
                                   const Measurement& child) {
  if (!parent.passed || !child.passed) return std::nullopt;
  auto changes = knob_changes(parent_point, child_point);
  if (changes.empty()) return std::nullopt;
  const Speedup speedup = speedup_of(parent, child);
  if (!speedup.significant()) return std::nullopt;
  return Conclusion{template_name, std::move(changes), speedup, parent_candidate, child_candidate};
}

std::string changes_text(const std::vector<KnobChange>& changes) {
  std::vector<std::string> parts;
  for (const KnobChange& change : changes)
    parts.push_back(fmt::format("{} {}->{}", change.knob, knob_value_text(change.from),
                                knob_value_text(change.to)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string conclusion_text(const Conclusion& conclusion, const std::string& problem,
                            const std::string& workload_class, const std::string& device) {
  std::vector<std::string> parts;
  for (const KnobChange& change : conclusion.changes)
    parts.push_back(fmt::format("{} from {} to {}", change.knob, knob_value_text(change.from),
                                knob_value_text(change.to)));
  return fmt::format(
      "({}, {}, {}): in {} changing {} made it faster by {:.2f}x ({:.2f}-{:.2f}), evidence "
      "candidates {} and {}",
      problem, workload_class, device, conclusion.template_name, fmt::join(parts, " and "),
      conclusion.speedup.value, conclusion.speedup.low, conclusion.speedup.high,
      conclusion.before_candidate, conclusion.after_candidate);
}

nlohmann::json knob_changes_to_json(const std::vector<KnobChange>& changes) {
  nlohmann::json json = nlohmann::json::array();
  for (const KnobChange& change : changes)
    json.push_back({{"knob", change.knob},
                    {"from", knob_value_to_json(change.from)},
                    {"to", knob_value_to_json(change.to)}});
  return json;
}

std::vector<KnobChange> knob_changes_from_json(const nlohmann::json& json,
                                               const std::string& where) {
  std::vector<KnobChange> changes;
  try {
    for (const auto& change : json) {
      const KnobPoint values =
          knob_point_from_json({{"from", change.at("from")}, {"to", change.at("to")}});
      changes.push_back({change.at("knob").get<std::string>(), values.at("from"), values.at("to")});
    }
  } catch (const nlohmann::json::exception& error) {
    throw InputError(fmt::format("{}: knob changes: {}", where, error.what()));
  }
  return changes;
}

nlohmann::json conclusion_to_json(const Conclusion& conclusion) {
  return {{"template", conclusion.template_name},
          {"changes", knob_changes_to_json(conclusion.changes)},
          {"speedup",
           {{"value", conclusion.speedup.value},
            {"low", conclusion.speedup.low},
            {"high", conclusion.speedup.high}}},
          {"before", conclusion.before_candidate},
          {"after", conclusion.after_candidate}};
}

}  // namespace kernelarc

#include "app/optimize_skills.h"

#include <fmt/format.h>

#include "backend/calibrate.h"
#include "kb/knowledge_base.h"

namespace kernelarc {

std::string hardware_name(const std::filesystem::path& workspace, const std::string& device) {
  const auto calibration = load_calibration(workspace, device);
  return calibration && !calibration->description.empty() ? calibration->description : device;
}

std::vector<SkillHint> retrieve_skill_hints(const std::filesystem::path& workspace,
                                            const SkillCondition& condition,
                                            const std::vector<std::string>& templates) {
  if (!std::filesystem::exists(knowledge_file(workspace))) return {};
  SkillStore store(knowledge_file(workspace));
  return skill_hints(store, condition, templates);
}

void record_run_skills(const std::filesystem::path& workspace, const OptimizeSummary& summary,
                       const SkillCondition& condition, std::ostream& out) {
  const auto observations = skill_observations(summary, condition);
  if (observations.empty()) {
    out << "skills: the run verified no knob change to learn from\n";
    return;
  }
  KnowledgeBase knowledge = open_knowledge_base(workspace);
  KnowledgeBaseMirror mirror(knowledge);
  SkillStore store(knowledge_file(workspace), &mirror);
  int created = 0;
  for (const SkillObservation& observation : observations)
    created += store.record(observation).evidence.size() == 1;
  out << fmt::format(
      "skills: {} observation(s) recorded, {} new skill(s) (kernelarc skills list)\n",
      observations.size(), created);
}

}  // namespace kernelarc

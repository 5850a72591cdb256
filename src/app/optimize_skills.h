// `kernelarc optimize` and the skill store: warm-start hints before a run, what the run taught
// after it. Both go through <workspace>/knowledge.sqlite.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "optimize/skill_distill.h"

namespace kernelarc {

/// The hardware's name, which skills and board posts are keyed by: the stored calibration's
/// description ("NVIDIA H200"), else the device string ("cuda:0", "cpu").
std::string hardware_name(const std::filesystem::path& workspace, const std::string& device);

/// The active skills for the run's templates (see skill_hints).
std::vector<SkillHint> retrieve_skill_hints(const std::filesystem::path& workspace,
                                            const SkillCondition& condition,
                                            const std::vector<std::string>& templates);

/// Records the run's observations in the skill store (mirrored into the knowledge base) and
/// prints one line about it.
void record_run_skills(const std::filesystem::path& workspace, const OptimizeSummary& summary,
                       const SkillCondition& condition, std::ostream& out);

}  // namespace kernelarc

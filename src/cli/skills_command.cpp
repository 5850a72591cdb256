// `kernelarc skills list` prints the skills distilled from the workspace's runs (active ones, or
// all with --all); `kernelarc skills show <id>` prints one with every observation behind it.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "app/table.h"
#include "cli/commands.h"
#include "core/error.h"
#include "kb/knowledge_base.h"
#include "kb/skill_store.h"
#include "store/workspace.h"

namespace kernelarc {

namespace {

struct SkillsFlags {
  std::string workspace = kDefaultWorkspace;
  bool all = false;
  std::string family;
  std::string device;
  int64_t skill_id = 0;
};

bool same_words(std::string a, std::string b) {
  auto lower = [](std::string& text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  };
  lower(a);
  lower(b);
  return a == b;
}

std::string effect_text(const SkillEffect& effect) {
  return fmt::format("{:.2f}x ({:.2f}-{:.2f})", effect.value, effect.low, effect.high);
}

int run_list(const SkillsFlags& flags) {
  const auto file = knowledge_file(flags.workspace);
  // A reader never creates the workspace: no knowledge file means no run has left skills.
  if (!std::filesystem::exists(file)) {
    std::cout << fmt::format("no skills yet in {}\n", flags.workspace);
    return 0;
  }
  SkillStore store(file);
  TextTable table({"id", "family", "device", "shape", "template", "action", "effect",
                   "confirmed/contradicted", "confidence", "status"});
  for (const Skill& skill : store.all()) {
    if (skill.retired && !flags.all) continue;
    if (!flags.family.empty() && !same_words(skill.family, flags.family)) continue;
    if (!flags.device.empty() && !same_words(skill.device, flags.device)) continue;
    table.add_row({std::to_string(skill.id), skill.family, skill.device, skill.shape_class,
                   skill.template_name, skill.action_text(), effect_text(skill.effect),
                   fmt::format("{}/{}", skill.confirmations, skill.contradictions),
                   fmt::format("{:.2f}", skill.confidence), skill.retired ? "retired" : "active"});
  }
  table.print(std::cout);
  return 0;
}

int run_show(const SkillsFlags& flags) {
  const auto file = knowledge_file(flags.workspace);
  std::optional<Skill> skill;
  if (std::filesystem::exists(file)) skill = SkillStore(file).get(flags.skill_id);
  if (!skill)
    throw InputError(fmt::format("skills show: the workspace {} has no skill {}", flags.workspace,
                                 flags.skill_id));
  std::cout << fmt::format("skill {} ({})\n", skill->id, skill->retired ? "retired" : "active");
  std::cout << fmt::format("condition: {} on {}, shape {}\n", skill->family, skill->device,
                           skill->shape_class);
  std::cout << fmt::format("action:    in template {}: {}\n", skill->template_name,
                           skill->action_text());
  std::cout << fmt::format(
      "effect:    {} pooled over {} observations; {} confirmations, {} contradictions, "
      "confidence {:.2f}\n",
      effect_text(skill->effect), skill->evidence.size(), skill->confirmations,
      skill->contradictions, skill->confidence);
  std::cout << "\nobservations\n";
  TextTable table({"run", "problem", "before", "after", "effect", "recorded"});
  for (const SkillEvidence& evidence : skill->evidence)
    table.add_row({std::to_string(evidence.run_id), evidence.problem,
                   std::to_string(evidence.before_candidate),
                   std::to_string(evidence.after_candidate), effect_text(evidence.effect),
                   evidence.recorded_at});
  table.print(std::cout);
  return 0;
}

}  // namespace

CommandRunner add_skills_commands(CLI::App& app) {
  auto flags = std::make_shared<SkillsFlags>();
  auto* skills = app.add_subcommand("skills", "the skills distilled from optimization runs");
  skills->require_subcommand(1);
  auto* list = skills->add_subcommand("list", "list skills: condition, action, effect");
  list->add_flag("--all", flags->all, "include retired skills");
  list->add_option("--family", flags->family, "only this op family (e.g. rmsnorm)");
  list->add_option("--device", flags->device, "only this device (e.g. \"NVIDIA H200\", cpu)");
  list->add_option("--workspace", flags->workspace, "the workspace")->capture_default_str();
  auto* show = skills->add_subcommand("show", "print a skill and every observation behind it");
  show->add_option("id", flags->skill_id, "skill id (see `kernelarc skills list`)")->required();
  show->add_option("--workspace", flags->workspace, "the workspace")->capture_default_str();
  return [flags, list] { return list->parsed() ? run_list(*flags) : run_show(*flags); };
}

}  // namespace kernelarc

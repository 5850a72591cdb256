// `kernelarc runs` lists the runs of a workspace; `kernelarc show <run>` prints one: its
// settings, the board, each agent's tree (compactly, a line per candidate, indented under its
// parent), the winner's lineage from the stored summary with why each step was proposed, and
// the stored Nsight Compute profiles.
#include <functional>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "app/table.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/eval_status.h"
#include "diagnosis/ncu_runner.h"
#include "optimize/orchestrator.h"
#include "store/workspace.h"
#include "synth/knob_point.h"

namespace kernelarc {

namespace {

struct RunsFlags {
  std::string workspace = kDefaultWorkspace;
  int64_t run_id = 0;
};

std::string best_text(const std::optional<nlohmann::json>& summary) {
  if (!summary || !summary->contains("speedup")) return "-";
  const auto& speedup = (*summary)["speedup"];
  return fmt::format("{:.2f}x ({:.2f}-{:.2f})", speedup["value"].get<double>(),
                     speedup["low"].get<double>(), speedup["high"].get<double>());
}

int run_list(const RunsFlags& flags) {
  Workspace workspace(flags.workspace);
  Database& db = workspace.database();
  TextTable table({"run", "created", "problem", "device", "status", "evaluated", "speedup"});
  for (const Run& run : db.list_runs()) {
    const Budget budget = db.budget_of(run.id);
    table.add_row({std::to_string(run.id), run.created_at, run.problem_name, run.device,
                   std::string(shown_run_status(run)),
                   fmt::format("{}/{}", budget.used, budget.total),
                   best_text(db.load_agent_state(run.id, "orchestrator"))});
  }
  table.print(std::cout);
  return 0;
}

/// A candidate's outcome in a few characters: its geometric-mean time and speedup over the
/// run's first candidate (the baseline when there is one), or its failing status.
std::string outcome(const std::optional<Evaluation>& evaluation, std::optional<double> reference) {
  if (!evaluation) return "not evaluated in the search";
  if (status_from_name(evaluation->status) != EvalStatus::Passed || !evaluation->median_ms)
    return evaluation->status;
  std::string text = fmt::format("{:.4f} ms", *evaluation->median_ms);
  if (reference) text += fmt::format(" {:.2f}x", *reference / *evaluation->median_ms);
  return text;
}

/// A step of a stored lineage; summaries stored before notes were kept take the candidate's.
std::string lineage_step(const nlohmann::json& step, const Candidate* candidate) {
  LineageStep parsed{step["candidate"].get<int64_t>(), step["agent"].get<std::string>(),
                     step["operation"].get<std::string>(), step["changes"].get<std::string>(),
                     step.value("note", std::string())};
  if (parsed.note.empty() && candidate != nullptr) parsed.note = candidate->note;
  return lineage_step_text(parsed);
}

void print_profiles(Database& db, int64_t run_id) {
  const std::vector<Profile> profiles = db.profiles_of(run_id);
  if (profiles.empty()) return;
  std::cout << "\nprofile:\n";
  for (const Profile& profile : profiles) {
    // Why there is none, without profile_text's pointer to a diagnosis that `show` does not print.
    std::string text = profile.record.contains("unavailable")
                           ? "no profile: " + profile.record["unavailable"].get<std::string>()
                           : profile_text(profile.record);
    for (std::size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1))
      text.insert(at + 1, "    ");
    std::cout << fmt::format("  #{} on workload {}: {}\n", profile.candidate_id, profile.workload,
                             text);
  }
}

int run_show(const RunsFlags& flags) {
  Workspace workspace(flags.workspace);
  Database& db = workspace.database();
  const auto run = db.find_run(flags.run_id);
  if (!run)
    throw InputError(
        fmt::format("show: the workspace {} has no run {}", flags.workspace, flags.run_id));
  const Budget budget = db.budget_of(run->id);
  std::cout << fmt::format("run {}: {} on {}, {} (created {}{}), seed {}, {}/{} evaluated\n",
                           run->id, run->problem_name, run->device, shown_run_status(*run),
                           run->created_at,
                           run->finished_at ? ", finished " + *run->finished_at : "", run->seed,
                           budget.used, budget.total);
  std::cout << "options: " << run->config.value("options", nlohmann::json::object()).dump() << '\n';

  const auto board = db.board_of(run->id);
  std::cout << fmt::format("\nboard ({} entries)\n", board.size());
  for (const BoardEntry& entry : board)
    std::cout << fmt::format("  {:>3} {:<10} {}\n", entry.seq, board_kind_name(entry.kind),
                             entry.text);

  const auto candidates = db.candidates_of(run->id);
  std::map<int64_t, std::optional<Evaluation>> evaluations;
  std::map<int64_t, const Candidate*> by_id;
  for (const Candidate& candidate : candidates) {
    evaluations[candidate.id] = db.evaluation_of(candidate.id);
    by_id[candidate.id] = &candidate;
  }
  std::optional<double> reference;
  if (!candidates.empty() && evaluations[candidates.front().id])
    reference = evaluations[candidates.front().id]->median_ms;
  std::map<std::string, std::vector<const Candidate*>> by_agent;
  std::map<int64_t, std::vector<const Candidate*>> children;
  for (const Candidate& candidate : candidates) {
    if (candidate.parent_id)
      children[*candidate.parent_id].push_back(&candidate);
    else
      by_agent[candidate.agent].push_back(&candidate);
  }
  std::cout << "\ntrees (candidate, outcome, template and point; children indented)\n";
  std::function<void(const Candidate&, int)> print = [&](const Candidate& candidate, int depth) {
    const std::string point = format_knob_point(knob_point_from_json(candidate.knob_point));
    std::cout << fmt::format(
        "  {}#{} {} {} {}{}\n", std::string(2 * depth, ' '), candidate.id,
        outcome(evaluations[candidate.id], reference), candidate.template_name, point,
        candidate.inspired_by.empty()
            ? ""
            : fmt::format(" (inspired by #{})", fmt::join(candidate.inspired_by, ", #")));
    for (const Candidate* child : children[candidate.id]) print(*child, depth + 1);
  };
  for (const auto& [agent, roots] : by_agent) {
    const auto state = db.load_agent_state(run->id, agent);
    std::cout << fmt::format(
        " {} {}\n", agent,
        state ? fmt::format("(drafts {}, candidates {})", state->value("drafts", 0),
                            state->value("candidates", 0))
              : "");
    for (const Candidate* root : roots) print(*root, 1);
  }

  if (const auto summary = db.load_agent_state(run->id, "orchestrator")) {
    std::cout << fmt::format("\nstopped: {}\n", summary->value("stop_reason", std::string("-")));
    if (!summary->at("finalists").empty()) {
      const auto& winner = summary->at("finalists").front();
      std::cout << fmt::format("winner: candidate {} ({}, found by {}), speedup {}\n",
                               winner["candidate"].get<int64_t>(),
                               winner["label"].get<std::string>(),
                               winner["agent"].get<std::string>(), best_text(summary));
      std::vector<std::string> steps;
      for (const auto& step : summary->at("lineage")) {
        const auto candidate = by_id.find(step["candidate"].get<int64_t>());
        steps.push_back(lineage_step(step, candidate == by_id.end() ? nullptr : candidate->second));
      }
      std::cout << fmt::format("lineage: {}\n", fmt::join(steps, " -> "));
    }
  } else {
    std::cout << "\nno summary yet (the run has not finished; `kernelarc optimize --resume` "
                 "continues it)\n";
  }
  print_profiles(db, run->id);
  return 0;
}

}  // namespace

CommandRunner add_runs_commands(CLI::App& app) {
  auto flags = std::make_shared<RunsFlags>();
  auto* runs = app.add_subcommand("runs", "list the optimization runs of a workspace");
  runs->add_option("--workspace", flags->workspace, "the workspace")->capture_default_str();
  auto* show = app.add_subcommand("show", "print a run: board, agent trees, winner's lineage");
  show->add_option("run", flags->run_id, "run id (see `kernelarc runs`)")->required();
  show->add_option("--workspace", flags->workspace, "the workspace")->capture_default_str();
  return [flags, runs] { return runs->parsed() ? run_list(*flags) : run_show(*flags); };
}

}  // namespace kernelarc

#include "app/run_winner.h"

#include <charconv>

#include <fmt/format.h>

#include "core/error.h"

namespace kernelarc {
bool names_run(const std::string& target) {
  if (target == "latest") return true;
  int64_t id = 0;
  const char* end = target.data() + target.size();
  return !target.empty() && std::from_chars(target.data(), end, id).ptr == end;
}

Run find_run_target(Workspace& workspace, const std::string& target, std::string_view others) {
  Database& db = workspace.database();
  if (target == "latest") {
    const auto runs = db.list_runs();
    if (runs.empty())
      throw InputError(
          fmt::format("latest: the workspace {} has no run", workspace.root().string()));
    return runs.back();
  }
  int64_t id = 0;
  const char* end = target.data() + target.size();
  if (std::from_chars(target.data(), end, id).ptr != end || id < 1)
    throw InputError(fmt::format("{}: expected a run id, \"latest\" {}", target, others));
  const auto run = db.find_run(id);
  if (!run)
    throw InputError(
        fmt::format("run {}: no such run in the workspace {}", id, workspace.root().string()));
  return *run;
}

RunWinner load_run_winner(Workspace& workspace, const std::string& target) {
  const Run run = find_run_target(workspace, target, "or a solution.json or solution directory");
  Database& db = workspace.database();
  const auto summary = db.load_agent_state(run.id, "orchestrator");
  const bool kept_baseline = summary && summary->value("kept_baseline", false);
  const nlohmann::json* best = nullptr;
  if (summary && kept_baseline && summary->contains("baseline")) {
    best = &summary->at("baseline");
  } else if (summary && summary->contains("finalists") && !summary->at("finalists").empty()) {
    best = &summary->at("finalists").front();
  }
  if (best == nullptr)
    throw InputError(fmt::format(
        "run {} ({}): no best solution yet (the run has not finished with a passing candidate)",
        run.id, run.problem_name));
  const int64_t candidate_id = best->at("candidate").get<int64_t>();
  const auto candidate = db.find_candidate(candidate_id);
  if (!candidate)
    throw InternalError(fmt::format("run {}: candidate {} is missing", run.id, candidate_id));

  RunWinner winner;
  winner.run_id = run.id;
  const std::string where = fmt::format("run {} candidate {}", run.id, candidate_id);
  winner.solution =
      parse_solution(OrderedJson::parse(workspace.objects().get(candidate->solution_key)), where,
                     workspace.root());
  winner.problem_dir = run.config.value("problem_dir", std::string());
  if (winner.problem_dir.empty() ||
      !std::filesystem::is_regular_file(winner.problem_dir / "definition.json"))
    throw InputError(fmt::format(
        "run {}: its problem directory \"{}\" has no definition.json any more; export the "
        "solution file with --problem DIR",
        run.id, winner.problem_dir.string()));
  return winner;
}

}  // namespace kernelarc

#include "python_module/loaded_target.h"

#include <fmt/format.h>

#include "app/run_winner.h"
#include "core/error.h"

namespace kernelarc {

LoadedTarget load_target(const std::string& target, const std::filesystem::path& workspace_dir,
                         const std::string& problem) {
  LoadedTarget loaded;
  std::filesystem::path problem_dir = problem;
  if (names_run(target)) {
    Workspace workspace(workspace_dir);
    RunWinner winner = load_run_winner(workspace, target);
    loaded.run_id = winner.run_id;
    loaded.solution = std::move(winner.solution);
    if (problem_dir.empty()) problem_dir = winner.problem_dir;
  } else {
    if (!std::filesystem::exists(target))
      throw InputError(fmt::format(
          "{}: expected a run id, \"latest\", or the path of a solution.json (or of a directory "
          "holding one)",
          target));
    if (problem_dir.empty())
      throw InputError(fmt::format(
          "{}: a solution path needs problem= (the problem directory it solves)", target));
    loaded.solution_path = std::filesystem::is_directory(target)
                               ? std::filesystem::path(target) / "solution.json"
                               : std::filesystem::path(target);
    loaded.solution = load_solution(loaded.solution_path);
  }
  loaded.definition = load_definition(problem_dir / "definition.json");
  loaded.problem_dir = problem_dir;
  return loaded;
}

OrderedJson loaded_target_to_json(const LoadedTarget& loaded) {
  OrderedJson json = {{"solution", solution_to_json(loaded.solution)},
                      {"definition", loaded.definition.raw},
                      {"problem_dir", loaded.problem_dir.string()},
                      {"solution_path", nullptr},
                      {"run_id", nullptr}};
  if (!loaded.solution_path.empty()) json["solution_path"] = loaded.solution_path.string();
  if (loaded.run_id) json["run_id"] = *loaded.run_id;
  return json;
}

}  // namespace kernelarc

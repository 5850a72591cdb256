// What `kernelarc.load` and `kernelarc.export_torch` start from: a run's winner or a solution
// file, with the definition it solves and the problem directory it came from.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "core/problem.h"

namespace kernelarc {

struct LoadedTarget {
  Solution solution;
  std::filesystem::path solution_path;  ///< the solution.json read; empty for a run's winner
  Definition definition;
  std::filesystem::path problem_dir;
  std::optional<int64_t> run_id;  ///< when the target named a run
};

/// `target`: a run id of the workspace, "latest" (its newest run) or a solution path (a
/// solution.json or a directory holding one). A run's best solution is read from the store
/// (app/run_winner.h) with the run's problem unless `problem` is given, which a solution path
/// requires. InputError naming what was expected otherwise.
LoadedTarget load_target(const std::string& target, const std::filesystem::path& workspace,
                         const std::string& problem);

/// {"solution", "definition", "problem_dir", "solution_path", "run_id"} as JSON.
OrderedJson loaded_target_to_json(const LoadedTarget& loaded);

}  // namespace kernelarc

// The best solution of an optimize run of the workspace, with the problem it solved: what
// `kernelarc export <run>` exports.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/problem.h"
#include "store/workspace.h"

namespace kernelarc {

struct RunWinner {
  int64_t run_id = 0;
  Solution solution;                  ///< the winner, or the baseline when the run kept it
  std::filesystem::path problem_dir;  ///< where the run read its problem
};

/// `target` is a run id or "latest". InputError when the run does not exist, has not finished
/// with a passing candidate, or its problem directory is gone.
RunWinner load_run_winner(Workspace& workspace, const std::string& target);

}  // namespace kernelarc

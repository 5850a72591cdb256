// The best solution of an optimize run of the workspace, with the problem it solved: what
// `kernelarc export <run>` exports.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/problem.h"
#include "store/workspace.h"

namespace kernelarc {

struct RunWinner {
  int64_t run_id = 0;
  Solution solution;                  ///< the winner, or the baseline when the run kept it
  std::filesystem::path problem_dir;  ///< where the run read its problem
};

/// Whether `target` names a run ("latest" or a number) rather than a path.
bool names_run(const std::string& target);

/// The run `target` names: its id or "latest". InputError when there is no such run, or when
/// `target` is neither; `others` completes that message with what else the command takes (e.g.
/// "or a solution.json or solution directory").
Run find_run_target(Workspace& workspace, const std::string& target, std::string_view others);

/// `target` is a run id or "latest". InputError when the run does not exist, has not finished
/// with a passing candidate, or its problem directory is gone.
RunWinner load_run_winner(Workspace& workspace, const std::string& target);

}  // namespace kernelarc

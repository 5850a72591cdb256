// `kernelarc eval <problem-dir> <solution>`: one solution through the guard, a table per
// workload, and optionally the traces as JSON and an Nsight Compute profile (--profile).
#include <iostream>
#include <memory>

#include "app/guard_session.h"
#include "app/recognize.h"
#include "cli/commands.h"
#include "cli/guard_flags.h"
#include "cli/profile_flags.h"
#include "core/problem.h"

namespace kernelarc {

namespace {

struct EvalFlags {
  std::string problem_dir;
  std::string solution;
  GuardFlags guard;
  ProfileFlags profile;
};

}  // namespace

CommandRunner add_eval_command(CLI::App& app) {
  auto flags = std::make_shared<EvalFlags>();
  auto* cmd = app.add_subcommand("eval", "evaluate one solution through the benchmark guard");
  cmd->add_option("problem", flags->problem_dir,
                  "problem directory (definition.json, workload.jsonl)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("solution", flags->solution, "solution.json, or a directory holding one")
      ->required()
      ->check(CLI::ExistingPath);
  add_guard_flags(*cmd, flags->guard);
  add_profile_flags(*cmd, flags->profile, /*with_top=*/false);
  return [flags] {
    // Recognized for the speed-of-light bound's bytes and FLOPs.
    const Problem problem =
        load_recognized_problem(
            flags->problem_dir,
            recognize_options(flags->guard.workspace, flags->guard.python, flags->guard.device))
            .problem;
    const Solution solution = load_solution(flags->solution);
    GuardSession session(flags->guard);
    return evaluate_report_and_profile(flags->profile, session, problem, solution, std::cout) ? 0
                                                                                              : 1;
  };
}

}  // namespace kernelarc

// The subcommands of the `kernelarc` executable. Each registers its flags on the CLI11 app and
// returns the function that runs it (returning the process exit code).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace kernelarc {

using CommandRunner = std::function<int()>;

CommandRunner add_eval_command(CLI::App& app);
CommandRunner add_worker_command(CLI::App& app);
CommandRunner add_profile_run_command(CLI::App& app);
CommandRunner add_calibrate_command(CLI::App& app);
CommandRunner add_templates_command(CLI::App& app);
CommandRunner add_optimize_command(CLI::App& app);
CommandRunner add_bench_command(CLI::App& app);
CommandRunner add_runs_commands(CLI::App& app);
CommandRunner add_kb_commands(CLI::App& app);
CommandRunner add_skills_commands(CLI::App& app);
CommandRunner add_prompt_command(CLI::App& app);
CommandRunner add_import_command(CLI::App& app);
CommandRunner add_explain_command(CLI::App& app);
CommandRunner add_report_command(CLI::App& app);
CommandRunner add_export_command(CLI::App& app);

}  // namespace kernelarc

// kernelarc: optimizes compute kernels autonomously. This file only dispatches subcommands and
// turns errors into exit codes: 2 for bad input (the message says what to fix), 3 for an
// internal failure.
#include <cstdio>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  // Line by line into a file or pipe too: a run stopped by a time limit keeps what it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{
      "kernelarc: autonomous compute-kernel optimization with a hack-proof benchmark guard"};
  app.require_subcommand(1);
  std::map<CLI::App*, kernelarc::CommandRunner> runners;
  auto add = [&](auto add_command) {
    const auto before = app.get_subcommands({});
    auto runner = add_command(app);
    for (auto* sub : app.get_subcommands({})) {
      if (std::find(before.begin(), before.end(), sub) == before.end()) runners[sub] = runner;
    }
  };
  add(kernelarc::add_eval_command);
  add(kernelarc::add_calibrate_command);
  add(kernelarc::add_templates_command);
  add(kernelarc::add_optimize_command);
  add(kernelarc::add_bench_command);
  add(kernelarc::add_runs_commands);
  add(kernelarc::add_kb_commands);
  add(kernelarc::add_skills_commands);
  add(kernelarc::add_prompt_command);
  add(kernelarc::add_import_command);
  add(kernelarc::add_explain_command);
  add(kernelarc::add_report_command);
  add(kernelarc::add_export_command);
  add(kernelarc::add_worker_command);
  add(kernelarc::add_profile_run_command);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  try {
    for (auto* sub : app.get_subcommands()) return runners.at(sub)();
  } catch (const kernelarc::InputError& error) {
    std::cerr << "error: " << error.what() << '\n';
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "internal error: " << error.what() << '\n';
    return 3;
  }
  return 0;
}

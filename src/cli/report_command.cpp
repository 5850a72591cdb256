// `kernelarc report <run|bench-dir>`: one self-contained HTML file of a run of the workspace (its
// search's progress per agent, tree, roofline, the winner's times against PyTorch's, the board,
// the winner's code and diagnosis) or of a `kernelarc bench` directory.
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "app/report_file.h"
#include "app/run_winner.h"
#include "cli/commands.h"
#include "core/error.h"
#include "store/workspace.h"

namespace kernelarc {

namespace {

struct ReportFlags {
  std::string target;  ///< a run id, "latest", or a directory holding bench.json
  std::string workspace = kDefaultWorkspace;
  std::string out;
};

int run_report(const ReportFlags& flags) {
  namespace fs = std::filesystem;
  if (fs::is_directory(flags.target)) {
    if (!fs::exists(fs::path(flags.target) / "bench.json"))
      throw InputError(
          fmt::format("report {}: a directory, but no bench.json in it (expected a "
                      "run id, \"latest\" or a `kernelarc bench` output directory)",
                      flags.target));
    const fs::path out =
        flags.out.empty() ? fs::path(flags.target) / "report.html" : fs::path(flags.out);
    write_bench_report(flags.target, out);
    std::cout << fmt::format("report written to {}\n", out.string());
    return 0;
  }
  Workspace workspace(flags.workspace);
  const int64_t run_id =
      find_run_target(workspace, flags.target, "or a `kernelarc bench` output directory").id;
  std::cout << fmt::format("report written to {}\n",
                           write_run_report(workspace, run_id, flags.out).string());
  return 0;
}

}  // namespace

CommandRunner add_report_command(CLI::App& app) {
  auto flags = std::make_shared<ReportFlags>();
  auto* cmd = app.add_subcommand(
      "report", "write one self-contained HTML report of a run or of a bench directory");
  cmd->add_option("target", flags->target,
                  "a run id of the workspace, \"latest\", or a `kernelarc bench` output directory")
      ->required();
  cmd->add_option("--workspace", flags->workspace, "workspace directory")->capture_default_str();
  cmd->add_option("--out", flags->out,
                  "the HTML file (default WORKSPACE/runs/ID/report.html, or report.html in the "
                  "bench directory)");
  return [flags] { return run_report(*flags); };
}

}  // namespace kernelarc

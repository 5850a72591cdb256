// `kernelarc export <run|latest|solution> --format sol-execbench|flashinfer`: writes a solution
// that SOL-ExecBench's or FlashInfer-Bench's own harness builds and scores, beside a copy of the
// problem's files, so that the other harness runs the directory as it is.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/run_winner.h"
#include "app/solution_export.h"
#include "cli/commands.h"
#include "core/error.h"
#include "store/workspace.h"

namespace kernelarc {

namespace {

namespace fs = std::filesystem;

struct ExportFlags {
  std::string target;  ///< a run id, "latest", or a solution.json or solution directory
  std::string format;
  std::string problem;
  std::string out;
  std::string workspace = kDefaultWorkspace;
  std::string name;
  std::string arch = ExportOptions{}.arch;
  bool value_returning = false;
};

struct ExportSource {
  Solution solution;
  fs::path problem_dir;
  fs::path default_out;
};

ExportSource find_source(const ExportFlags& flags, ExportFormat format) {
  const std::string out_name = fmt::format("export-{}", export_format_name(format));
  if (fs::exists(flags.target)) {
    if (flags.problem.empty())
      throw InputError(fmt::format(
          "--problem: required when the target is a solution file ({}): the problem directory "
          "holding definition.json",
          flags.target));
    return {load_solution(flags.target), flags.problem, fs::path(out_name)};
  }
  Workspace workspace(flags.workspace);
  RunWinner winner = load_run_winner(workspace, flags.target);
  const fs::path problem = flags.problem.empty() ? winner.problem_dir : fs::path(flags.problem);
  return {std::move(winner.solution), problem,
          workspace.root() / "runs" / std::to_string(winner.run_id) / out_name};
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream file(path, std::ios::binary);
  file << text;
  if (!file) throw InputError(fmt::format("--out: cannot write {}", path.string()));
}

void copy_into(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  std::error_code error;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, error);
  if (error)
    throw InputError(fmt::format("--out: cannot copy {} to {}: {}", from.string(), to.string(),
                                 error.message()));
}

// The harness reads definition.json, workload.jsonl and the safetensors inputs they name
// (relative to the directory) from the directory it is given.
std::vector<std::string> copy_problem(const Problem& problem, const fs::path& out) {
  std::vector<std::string> copied = {"definition.json", "workload.jsonl"};
  for (const std::string& name : copied) copy_into(problem.dir / name, out / name);
  std::set<std::string> blobs;
  for (const Workload& workload : problem.workloads)
    for (const auto& [name, input] : workload.inputs)
      if (input.kind == InputKind::Safetensors && fs::path(input.path).is_relative())
        blobs.insert(input.path);
  for (const std::string& blob : blobs) {
    copy_into(problem.dir / blob, out / blob);
    copied.push_back(blob);
  }
  return copied;
}

int run_export(const ExportFlags& flags) {
  const auto format = export_format_from_name(flags.format);
  if (!format)
    throw InputError(
        fmt::format("--format: expected sol-execbench or flashinfer, got \"{}\"", flags.format));
  const ExportSource source = find_source(flags, *format);
  const Problem problem = load_problem(source.problem_dir);
  ExportOptions options;
  options.format = *format;
  options.destination_passing_style = !flags.value_returning;
  options.name = flags.name;
  options.arch = flags.arch;
  const Solution exported = export_torch_solution(source.solution, problem.definition, options);

  const fs::path out = flags.out.empty() ? source.default_out : fs::path(flags.out);
  write_text(out / "solution.json", exported_solution_json(exported, *format).dump(2) + "\n");
  const std::vector<std::string> copied = copy_problem(problem, out);
  std::cout << fmt::format("wrote {} ({}, {} style, {} sources inline)\n",
                           (out / "solution.json").string(), export_format_name(*format),
                           flags.value_returning ? "value-returning" : "destination-passing",
                           exported.sources.size());
  std::cout << fmt::format("copied {} from {}\n", fmt::join(copied, ", "), problem.dir.string());
  if (*format == ExportFormat::SolExecBench)
    std::cout << fmt::format("run it with: sol-execbench {} --solution {}\n", out.string(),
                             (out / "solution.json").string());
  return 0;
}

}  // namespace

CommandRunner add_export_command(CLI::App& app) {
  auto flags = std::make_shared<ExportFlags>();
  auto* cmd = app.add_subcommand(
      "export",
      "write a solution as a SOL-ExecBench or FlashInfer-Bench solution (a PyTorch "
      "extension their harness builds), beside a copy of its problem");
  cmd->add_option("target", flags->target,
                  "a run id of the workspace, \"latest\" (the run's best solution), or a "
                  "solution.json or solution directory")
      ->required();
  cmd->add_option("--format", flags->format, "sol-execbench or flashinfer")->required();
  cmd->add_option("--problem", flags->problem,
                  "the problem directory (definition.json, workload.jsonl); required for a "
                  "solution file, default for a run: the run's problem");
  cmd->add_option("--out", flags->out,
                  "output directory (default WORKSPACE/runs/ID/export-FORMAT for a run, else "
                  "./export-FORMAT)");
  cmd->add_option("--workspace", flags->workspace, "workspace directory")->capture_default_str();
  cmd->add_option("--name", flags->name, "the exported solution's name (default: NAME_torch)");
  cmd->add_option("--arch", flags->arch,
                  "the GPU to build for, e.g. sm_90 (an \"a\" is added when the kernel needs it)")
      ->capture_default_str();
  cmd->add_flag("--value-returning", flags->value_returning,
                "`run` returns the outputs instead of writing into outputs passed after the "
                "inputs (destination_passing_style false)");
  return [flags] { return run_export(*flags); };
}

}  // namespace kernelarc

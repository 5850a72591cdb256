// `kernelarc templates list` and `kernelarc templates try`: the template library, by hand.
// `try` instantiates one template at one knob point for a problem and runs it through the guard,
// so a person can explore a space before a search does.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "app/extra_files.h"
#include "app/guard_session.h"
#include "app/recognize.h"
#include "app/table.h"
#include "app/template_sweep.h"
#include "backend/backend.h"
#include "cli/commands.h"
#include "cli/guard_flags.h"
#include "cli/profile_flags.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "synth/bound_template.h"

namespace kernelarc {

namespace {

struct TemplatesFlags {
  std::string root;
  // list
  std::string list_problem;
  std::string target;
  // try
  std::string problem_dir;
  std::string template_name;
  std::string knobs;
  std::vector<std::string> files;
  std::string export_dir;
  GuardFlags guard;
  ProfileFlags profile;
};

std::filesystem::path library_root(const TemplatesFlags& flags) {
  return flags.root.empty() ? default_template_root() : std::filesystem::path(flags.root);
}

DeviceKind target_of_device(const std::string& device) {
  return backend_for(device).kind();
}

/// At most `limit` valid points are counted, so a huge space answers quickly.
std::string count_valid(const ConstrainedSpace& space, std::size_t limit) {
  std::size_t count = 0;
  const bool complete = space.for_each_valid([&](const KnobPoint&) { return ++count < limit; });
  return complete ? std::to_string(count) : fmt::format(">={}", count);
}

int run_list(const TemplatesFlags& flags) {
  const auto library = load_template_library(library_root(flags));
  if (flags.list_problem.empty()) {
    TextTable table({"template", "target", "families", "build", "knobs", "product", "description"});
    for (const KernelTemplate& kernel : library) {
      if (!flags.target.empty() && device_kind_from_name(flags.target) != kernel.target) continue;
      table.add_row({kernel.name, std::string(device_kind_name(kernel.target)),
                     fmt::format("{}", fmt::join(kernel.families, ",")),
                     kernel.build == TemplateBuild::Nvrtc ? "nvrtc" : "shared_object",
                     std::to_string(kernel.knobs.knobs().size()),
                     std::to_string(kernel.knobs.product_size()),
                     kernel.description.substr(0, 60)});
    }
    table.print(std::cout);
    return 0;
  }
  // The listing covers every target unless --target names one, and so must recognition: a
  // problem only CUDA templates serve (NVFP4 attention) is served, not refused for the CPU.
  RecognizeOptions recognition_options =
      recognize_options(flags.guard.workspace, flags.guard.python, flags.guard.device);
  recognition_options.target =
      flags.target.empty() ? std::nullopt : device_kind_from_name(flags.target);
  const RecognizedProblem loaded = load_recognized_problem(flags.list_problem, recognition_options);
  const Problem& problem = loaded.problem;
  std::cout << fmt::format("problem {} (op family \"{}\")\n", problem.definition.name,
                           problem.definition.ext.op_family);
  const Recognition& recognition = loaded.recognition;
  if (!recognition.served()) {
    std::cout << "not served: " << recognition.reason << '\n';
    return 1;
  }
  if (recognition.source != Recognition::Source::Annotated)
    std::cout << fmt::format("recognized ({}): {}\n", source_name(recognition.source),
                             recognition.summary);
  int served = 0;
  for (const DeviceKind kind : {DeviceKind::Cuda, DeviceKind::Cpu}) {
    if (!flags.target.empty() && device_kind_from_name(flags.target) != kind) continue;
    const std::string target(device_kind_name(kind));
    const auto matches = match_templates(library, problem, kind);
    if (matches.empty()) {
      std::cout << describe_no_template(library, problem, kind) << '\n';
      continue;
    }
    TextTable table({"template", "target", "serves", "valid_points", "default_point"});
    for (const TemplateMatch& match : matches) {
      if (!match.bound) {
        table.add_row({match.kernel->name, target, "no: " + match.reason, "-", "-"});
        continue;
      }
      ++served;
      table.add_row({match.kernel->name, target, "yes", count_valid(match.bound->space(), 100000),
                     format_knob_point(match.kernel->knobs.default_point())});
    }
    table.print(std::cout);
  }
  return served > 0 ? 0 : 1;
}

/// `step`'s result; an InputError it throws is said to be about --knobs.
template <class Step>
auto about_knobs_flag(Step&& step) {
  try {
    return step();
  } catch (const InputError& error) {
    throw InputError(std::string("--knobs: ") + error.what());
  }
}

int run_try(const TemplatesFlags& flags) {
  const auto library = load_template_library(library_root(flags));
  const Problem problem =
      load_recognized_problem(
          flags.problem_dir,
          recognize_options(flags.guard.workspace, flags.guard.python, flags.guard.device))
          .problem;
  const KernelTemplate* kernel = nullptr;
  for (const KernelTemplate& candidate : library)
    if (candidate.name == flags.template_name) kernel = &candidate;
  if (kernel == nullptr) {
    std::vector<std::string> names;
    for (const KernelTemplate& candidate : library) names.push_back(candidate.name);
    throw_input_error(
        "templates try", flags.template_name,
        fmt::format("no such template (the library has: {})", fmt::join(names, ", ")));
  }
  if (kernel->target != target_of_device(flags.guard.device)) {
    throw_input_error(
        "--device", flags.guard.device,
        fmt::format("template {} targets {}", kernel->name, device_kind_name(kernel->target)));
  }
  const BoundTemplate bound(*kernel, problem);
  const KnobPoint point =
      about_knobs_flag([&] { return kernel->knobs.default_with(parse_knob_point(flags.knobs)); });
  if (auto reason = bound.infeasible(point)) {
    throw InputError(fmt::format("template {}: knob point \"{}\" cannot launch: {}", kernel->name,
                                 format_knob_point(point), *reason));
  }
  const Solution solution = bound.instantiate(point, read_extra_files(flags.files));
  std::cout << fmt::format("template {} at {}\n", kernel->name, format_knob_point(point));
  for (const std::string& trade : solution_accuracy_trades(solution))
    std::cout << "this point trades accuracy the reference keeps (not like for like): " << trade
              << '\n';
  if (!flags.export_dir.empty()) {
    std::filesystem::create_directories(flags.export_dir);
    const auto path = std::filesystem::path(flags.export_dir) / "solution.json";
    std::ofstream file(path);
    if (!file) throw_input_error("--export", flags.export_dir, "cannot write solution.json");
    file << solution_to_json(solution).dump(2) << '\n';
    std::cout << "solution written to " << path.string() << '\n';
  }
  GuardSession session(flags.guard);
  return evaluate_report_and_profile(flags.profile, session, problem, solution, std::cout) ? 0 : 1;
}

}  // namespace

CommandRunner add_templates_command(CLI::App& app) {
  auto flags = std::make_shared<TemplatesFlags>();
  auto* cmd = app.add_subcommand("templates", "the kernel template library: list, try by hand");
  cmd->require_subcommand(1);
  cmd->add_option("--root", flags->root, "template library (default: the bundled one)");
  auto* list = cmd->add_subcommand("list", "the templates, or those serving one problem");
  list->add_option("--problem", flags->list_problem, "problem directory")
      ->check(CLI::ExistingDirectory);
  list->add_option("--target", flags->target, "cuda or cpu")->check(CLI::IsMember({"cuda", "cpu"}));
  list->add_option("--workspace", flags->guard.workspace, "where traced references are cached")
      ->capture_default_str();
  list->add_option("--python", flags->guard.python,
                   "Python with torch to trace the reference (default: detect)");
  auto* try_cmd = cmd->add_subcommand(
      "try", "instantiate a template at a knob point and run it through the guard");
  try_cmd->add_option("problem", flags->problem_dir, "problem directory")
      ->required()
      ->check(CLI::ExistingDirectory);
  try_cmd->add_option("template", flags->template_name, "template name (see templates list)")
      ->required();
  try_cmd->add_option("--knobs", flags->knobs, "K=V,... over the template's default point");
  try_cmd->add_option("--file", flags->files,
                      "NAME=PATH: add a file to the solution (e.g. a tuned table the template "
                      "includes)");
  try_cmd->add_option("--export", flags->export_dir, "also write the solution.json here");
  add_guard_flags(*try_cmd, flags->guard);
  add_profile_flags(*try_cmd, flags->profile, /*with_top=*/false);

  auto sweep = std::make_shared<SweepFlags>();
  auto* sweep_cmd = cmd->add_subcommand(
      "sweep", "benchmark: every serving template at several knob points, best per workload");
  sweep_cmd->add_option("problems", sweep->problems, "problem directories")
      ->required()
      ->check(CLI::ExistingDirectory);
  sweep_cmd->add_option("--template", sweep->templates, "only these templates");
  sweep_cmd->add_option("--file", flags->files,
                        "NAME=PATH: add a file to every instantiated solution");
  sweep_cmd
      ->add_option("--random-points", sweep->random_points,
                   "seeded random points per template, besides the default and extremes")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  sweep_cmd->add_option("--point-seed", sweep->seed, "seed of the random knob points")
      ->capture_default_str();
  auto pinned_text = std::make_shared<std::string>();
  sweep_cmd->add_option(
      "--knobs", *pinned_text,
      "K=V,...: only points with these values, the other knobs swept around them");
  sweep_cmd->add_flag("--keep-accuracy", sweep->keep_accuracy,
                      "no knob value that gives up accuracy the reference keeps");
  add_guard_flags(*sweep_cmd, sweep->guard);
  return [flags, sweep, list, sweep_cmd, pinned_text] {
    if (list->parsed()) return run_list(*flags);
    if (sweep_cmd->parsed()) {
      sweep->root = flags->root;
      sweep->pinned = about_knobs_flag([&] { return parse_knob_point(*pinned_text); });
      sweep->extra_files = read_extra_files(flags->files);
      return run_template_sweep(*sweep);
    }
    return run_try(*flags);
  };
}

}  // namespace kernelarc

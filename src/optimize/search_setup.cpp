#include "optimize/search_setup.h"

#include <fmt/format.h>

#include "backend/backend.h"
#include "core/error.h"

namespace kernelarc {

std::optional<std::filesystem::path> bundled_baseline_dir(const std::filesystem::path& problem_dir,
                                                          const std::string& choice) {
  if (choice == "none") return std::nullopt;
  if (!choice.empty()) return choice;
  for (const char* name : {"naive", "basic"}) {
    const auto dir = problem_dir / "solutions" / name;
    if (std::filesystem::exists(dir / "solution.json")) return dir;
  }
  return std::nullopt;
}

SearchSetup::SearchSetup(const std::filesystem::path& problem_dir, SearchSetupOptions options)
    : SearchSetup(load_problem(problem_dir), std::move(options)) {}

SearchSetup::SearchSetup(Problem problem, SearchSetupOptions options)
    : options_(std::move(options)), problem_(std::move(problem)) {
  const std::filesystem::path& problem_dir = problem_.dir;
  library_ = load_template_library(options_.template_root.empty() ? default_template_root()
                                                                  : options_.template_root);
  if (options_.keep_accuracy) keep_accuracy(library_);
  const DeviceKind target = backend_for(options_.device).kind();
  matches_ = match_templates(library_, problem_, target);
  const bool any = std::any_of(matches_.begin(), matches_.end(),
                               [](const TemplateMatch& match) { return match.bound.has_value(); });
  if (!any && options_.require_templates) {
    std::string why = describe_no_template(library_, problem_, target);
    for (const TemplateMatch& match : matches_)
      why += fmt::format("; {}: {}", match.kernel->name, match.reason);
    throw InputError(fmt::format("{}: nothing to search: {}", problem_dir.string(), why));
  }
  if (const auto dir = bundled_baseline_dir(problem_dir, options_.baseline)) {
    baseline_ = load_solution(*dir);
    if (baseline_->definition != problem_.definition.name)
      throw InputError(fmt::format("--baseline {}: a solution of {}, not of {}", dir->string(),
                                   baseline_->definition, problem_.definition.name));
  }
}

OptimizeTarget SearchSetup::target(const std::vector<Workload>& workloads) const {
  OptimizeTarget target;
  target.problem = &problem_;
  for (const TemplateMatch& match : matches_)
    if (match.bound) target.templates.push_back(&*match.bound);
  target.extra_files = options_.extra_files;
  target.baseline = baseline_;
  target.device = options_.device;
  if (workloads.size() == problem_.workloads.size()) {
    target.workload_class = fmt::format("all {} workloads", workloads.size());
  } else {
    std::vector<std::string> parts;
    for (const Workload& workload : workloads) parts.push_back(format_axes(workload.axes));
    target.workload_class = fmt::format("{}", fmt::join(parts, "; "));
  }
  if (!workloads.empty()) target.largest_workload = largest_workload(workloads).uuid;
  target.workloads = workloads;
  return target;
}

const Workload& largest_workload(const std::vector<Workload>& workloads) {
  const Workload* largest = &workloads.front();
  double largest_size = -1;
  for (const Workload& workload : workloads) {
    double size = 1;
    for (const auto& [name, value] : workload.axes) size *= static_cast<double>(value);
    if (size >= largest_size) {
      largest = &workload;
      largest_size = size;
    }
  }
  return *largest;
}

}  // namespace kernelarc

// Everything a search over one problem needs before it starts: the problem, the templates that
// serve it on the device, the bundled baseline solution and the evaluated workloads in words.
// Shared by `kernelarc optimize` and the agents benchmark.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optimize/orchestrator.h"
#include "synth/bound_template.h"

namespace kernelarc {

struct SearchSetupOptions {
  std::string device = "cpu";           ///< "cpu" or "cuda:N"
  std::filesystem::path template_root;  ///< empty = default_template_root()
  std::map<std::string, std::string> extra_files;
  /// The solution speedups are measured against: empty = the problem's solutions/naive, else
  /// solutions/basic, else none; "none" = none.
  std::string baseline;
  /// false when a code synthesizer writes programs: a problem no template serves is then
  /// searched too.
  bool require_templates = true;
  /// Leave out the knob values that trade accuracy the reference keeps (synth/knob.h), so that
  /// the winner's speed is like for like with the baselines'.
  bool keep_accuracy = false;
};

/// The bundled solution a problem is measured against: `choice` when given ("none" = none),
/// else the problem's solutions/naive, else solutions/basic, else none.
std::optional<std::filesystem::path> bundled_baseline_dir(const std::filesystem::path& problem_dir,
                                                          const std::string& choice = "");

class SearchSetup {
 public:
  /// Loads the problem and the library and binds every template that serves the problem.
  /// InputError when no template serves it (the message says why) or the baseline is unreadable.
  SearchSetup(const std::filesystem::path& problem_dir, SearchSetupOptions options);
  /// The same for a problem the caller loaded (and whose op_family it may have recognized).
  SearchSetup(Problem problem, SearchSetupOptions options);
  SearchSetup(const SearchSetup&) = delete;
  SearchSetup& operator=(const SearchSetup&) = delete;

  const Problem& problem() const { return problem_; }
  /// The target for these evaluated workloads (a subset of the problem's, or all).
  OptimizeTarget target(const std::vector<Workload>& workloads) const;

 private:
  SearchSetupOptions options_;
  Problem problem_;
  std::vector<KernelTemplate> library_;
  std::vector<TemplateMatch> matches_;
  std::optional<Solution> baseline_;
};

/// The workload with the largest product of var-axis values (the last of equals).
const Workload& largest_workload(const std::vector<Workload>& workloads);

}  // namespace kernelarc

#include "app/template_sweep.h"

#include <iostream>
#include <map>
#include <set>
#include <span>

#include <fmt/format.h>

#include "app/recognize.h"
#include "app/table.h"
#include "backend/backend.h"
#include "optimize/search_setup.h"
#include "synth/bound_template.h"
#include "synth/representative_points.h"

namespace kernelarc {

namespace {

struct Best {
  std::string template_name;
  KnobPoint point;
  double median_ms = 0;
  const BoundTemplate* bound = nullptr;
};

std::string ms(const std::optional<double>& value) {
  return value ? fmt::format("{:.4f}", *value) : "-";
}

/// The library baseline of a GEMM: cuBLASLt at its heuristic's first choice, same guard.
std::optional<double> cublaslt_default_ms(const std::vector<TemplateMatch>& matches,
                                          const Problem& problem, const Workload& workload,
                                          Guard& guard) {
  for (const TemplateMatch& match : matches) {
    if (!match.bound || match.kernel->name != "gemm_cublaslt") continue;
    const KnobPoint point = match.bound->space().space().default_point();
    const auto traces = guard.evaluate(problem, match.bound->instantiate(point),
                                       std::span<const Workload>(&workload, 1));
    if (traces.size() == 1 && traces[0].status == EvalStatus::Passed && traces[0].latency_ms)
      return traces[0].latency_ms->median;
  }
  return std::nullopt;
}

/// The problem's bundled solution (solutions/naive or basic) at `workload`, same guard: what
/// kernelarc's search starts from and its speedups are measured against.
std::optional<std::pair<std::string, double>> bundled_ms(const std::string& dir,
                                                         const Problem& problem,
                                                         const Workload& workload, Guard& guard) {
  const auto bundled = bundled_baseline_dir(dir);
  if (!bundled) return std::nullopt;
  const Solution solution = load_solution(*bundled);
  const auto traces = guard.evaluate(problem, solution, std::span<const Workload>(&workload, 1));
  if (traces.size() != 1 || traces[0].status != EvalStatus::Passed || !traces[0].latency_ms)
    return std::nullopt;
  return std::pair{bundled->filename().string(), traces[0].latency_ms->median};
}

bool sweep_problem(const std::string& dir, const std::vector<KernelTemplate>& library,
                   const SweepFlags& flags, GuardSession& fast, GuardSession& full) {
  const RecognizedProblem loaded = load_recognized_problem(
      dir, recognize_options(flags.guard.workspace, flags.guard.python, flags.guard.device));
  const Problem& problem = loaded.problem;
  const DeviceKind target = backend_for(flags.guard.device).kind();
  const auto matches = match_templates(library, problem, target);
  const auto workloads = fast.select_workloads(problem);
  std::cout << fmt::format("== {} ({} workloads, op family {})\n", problem.definition.name,
                           workloads.size(), problem.definition.ext.op_family);
  if (!loaded.recognition.served()) {
    std::cout << "not served: " << loaded.recognition.reason << '\n';
    return false;
  }
  if (loaded.recognition.source != Recognition::Source::Annotated)
    std::cout << fmt::format("recognized ({}): {}\n", source_name(loaded.recognition.source),
                             loaded.recognition.summary);
  if (matches.empty()) {
    std::cout << describe_no_template(library, problem, target) << '\n';
    return false;
  }
  std::map<std::string, Best> best;  // by workload uuid
  TextTable tried({"template", "points", "passed_all", "failed_points"});
  for (const TemplateMatch& match : matches) {
    if (!flags.templates.empty() && std::find(flags.templates.begin(), flags.templates.end(),
                                              match.kernel->name) == flags.templates.end())
      continue;
    if (!match.bound) {
      tried.add_row({match.kernel->name, "-", "-", "does not serve: " + match.reason});
      continue;
    }
    const KnobSpace& knobs = match.bound->space().space();
    std::vector<std::string> lacking;
    for (const auto& [name, value] : flags.pinned)
      if (!knobs.knob_index(name)) lacking.push_back(name);
    if (!lacking.empty()) {
      tried.add_row({match.kernel->name, "-", "-",
                     fmt::format("has no knob {} (--knobs)", fmt::join(lacking, ", "))});
      continue;
    }
    knobs.default_with(flags.pinned);  // a pinned value outside its knob's domain is an input error
    const auto points =
        representative_points(*match.bound, flags.random_points, flags.seed, flags.pinned).points;
    int passed_all = 0;
    std::vector<std::string> failed;
    for (std::size_t index = 0; index < points.size(); ++index) {
      const KnobPoint& point = points[index];
      const auto traces = fast.guard().evaluate(
          problem, match.bound->instantiate(point, flags.extra_files), workloads);
      // A line per point as it finishes, so a sweep cut short still shows what it measured.
      std::vector<std::string> medians;
      for (const Trace& trace : traces)
        medians.push_back(trace.status == EvalStatus::Passed && trace.latency_ms
                              ? fmt::format("{:.4f}", trace.latency_ms->median)
                              : std::string(status_name(trace.status)));
      std::cout << fmt::format("  {} point {}/{} {}: {}\n", match.kernel->name, index + 1,
                               points.size(), format_knob_point(point), fmt::join(medians, " "))
                << std::flush;
      bool all = true;
      for (const Trace& trace : traces) {
        if (trace.status != EvalStatus::Passed || !trace.latency_ms) {
          all = false;
          continue;
        }
        const std::string uuid = trace.workload.value("uuid", std::string());
        auto [entry, fresh] = best.try_emplace(uuid);
        if (fresh || trace.latency_ms->median < entry->second.median_ms)
          entry->second = {match.kernel->name, point, trace.latency_ms->median, &*match.bound};
      }
      passed_all += all;
      if (!all) failed.push_back(format_knob_point(point));
    }
    tried.add_row({match.kernel->name, std::to_string(points.size()), std::to_string(passed_all),
                   failed.empty() ? "-" : fmt::format("{}", fmt::join(failed, " | "))});
  }
  tried.print(std::cout);

  const bool gemm = problem.definition.ext.op_family == "gemm";
  std::vector<std::string> header{"workload",    "template",      "best_point",   "median_ms",
                                  "ci95_ms",     "sol_ms",        "sol_fraction", "eager_ms",
                                  "compiled_ms", "vs_best_torch", "bundled_ms",   "vs_bundled"};
  if (gemm) header.insert(header.end(), {"cublaslt_default_ms", "vs_cublaslt"});
  TextTable table(header);
  bool complete = true;
  for (const Workload& workload : workloads) {
    const AxisValues axes = workload.axes;
    const auto found = best.find(workload.uuid);
    if (found == best.end()) {
      complete = false;
      table.add_row({format_axes(axes), "none passed"});
      continue;
    }
    const Best& winner = found->second;
    // The winner again, with the baselines, under the same protocol as `kernelarc eval`.
    const auto traces =
        full.guard().evaluate(problem, winner.bound->instantiate(winner.point, flags.extra_files),
                              std::span<const Workload>(&workload, 1));
    const Trace& trace = traces.front();
    if (trace.status != EvalStatus::Passed || !trace.latency_ms) {
      complete = false;
      table.add_row({format_axes(axes), winner.template_name, format_knob_point(winner.point),
                     std::string(status_name(trace.status))});
      continue;
    }
    const auto& latency = *trace.latency_ms;
    const auto baseline = trace.baseline_ms();
    const bool trades = !winner.bound->space().space().accuracy_trades(winner.point).empty();
    std::vector<std::string> row{
        format_axes(axes),
        winner.template_name,
        format_knob_point(winner.point) + (trades ? " [trades accuracy]" : ""),
        fmt::format("{:.4f}", latency.median),
        fmt::format("{:.4f}-{:.4f}", latency.ci_low, latency.ci_high),
        ms(trace.sol_ms),
        trace.sol_ms ? fmt::format("{:.2f}", *trace.sol_ms / latency.median) : "-",
        ms(trace.eager_ms),
        ms(trace.compiled_ms),
        baseline ? fmt::format("{:.2f}x", *baseline / latency.median) : "-"};
    const auto bundled = bundled_ms(dir, problem, workload, fast.guard());
    row.push_back(bundled ? fmt::format("{:.4f} ({})", bundled->second, bundled->first) : "-");
    row.push_back(bundled ? fmt::format("{:.2f}x", bundled->second / latency.median) : "-");
    if (gemm) {
      const auto library_ms = cublaslt_default_ms(matches, problem, workload, fast.guard());
      row.push_back(ms(library_ms));
      row.push_back(library_ms ? fmt::format("{:.2f}x", *library_ms / latency.median) : "-");
    }
    table.add_row(std::move(row));
  }
  table.print(std::cout);
  return complete;
}

}  // namespace

int run_template_sweep(const SweepFlags& flags) {
  auto library = load_template_library(flags.root.empty() ? default_template_root()
                                                          : std::filesystem::path(flags.root));
  if (flags.keep_accuracy) keep_accuracy(library);
  GuardFlags fast_flags = flags.guard;
  fast_flags.no_baseline = true;
  fast_flags.json_path.clear();
  GuardSession fast(fast_flags);
  GuardSession full(flags.guard);
  std::cout << fmt::format(
      "template sweep on {}: per point every workload through the guard (no baselines); per "
      "workload the fastest passing point re-measured with the baselines. sol_fraction = "
      "T_SOL / median (calibrated bandwidth or peak); vs_best_torch = the faster of eager and "
      "torch.compile / median; vs_bundled = the problem's bundled solution (naive or basic), "
      "same guard, / median.\n",
      flags.guard.device);
  bool all = true;
  for (const std::string& problem : flags.problems)
    all = sweep_problem(problem, library, flags, fast, full) && all;
  return all ? 0 : 1;
}

}  // namespace kernelarc

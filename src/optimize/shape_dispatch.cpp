#include "optimize/shape_dispatch.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kernelarc {

DispatchPlan plan_shape_dispatch(const std::vector<Workload>& workloads, const DispatchSource& base,
                                 const std::vector<DispatchSource>& sources) {
  DispatchPlan plan;
  for (const Workload& workload : workloads) {
    const auto base_time = base.measurement->times.find(workload.uuid);
    if (base_time == base.measurement->times.end()) continue;
    const DispatchSource* best = nullptr;
    const WorkloadTime* best_time = nullptr;
    for (const DispatchSource& source : sources) {
      if (source.candidate_id == base.candidate_id || !source.measurement->passed) continue;
      const auto time = source.measurement->times.find(workload.uuid);
      if (time == source.measurement->times.end()) continue;
      const bool faster = best_time == nullptr || time->second.median_ms < best_time->median_ms ||
                          (time->second.median_ms == best_time->median_ms &&
                           source.candidate_id < best->candidate_id);
      if (faster) {
        best = &source;
        best_time = &time->second;
      }
    }
    if (best != nullptr && best_time->ci_high_ms < base_time->second.ci_low_ms) {
      plan.choices.push_back(
          {&workload, best->candidate_id, best_time->median_ms, base_time->second.median_ms});
    }
  }
  return plan;
}

std::vector<int64_t> dispatch_sources(const DispatchPlan& plan) {
  std::vector<int64_t> sources;
  for (const DispatchPlan::Choice& choice : plan.choices)
    if (std::find(sources.begin(), sources.end(), choice.candidate_id) == sources.end())
      sources.push_back(choice.candidate_id);
  return sources;
}

std::string exact_shape_condition(const Workload& workload) {
  std::vector<std::string> terms;
  for (const auto& [axis, value] : workload.axes)
    terms.push_back(fmt::format("{} == {}", axis, value));
  return fmt::format("{}", fmt::join(terms, " and "));
}

std::vector<SolutionVariant> dispatch_variants(
    const DispatchPlan& plan, const std::function<Solution(int64_t)>& solution_of) {
  std::map<int64_t, std::vector<std::string>> conditions;
  for (const DispatchPlan::Choice& choice : plan.choices)
    conditions[choice.candidate_id].push_back(exact_shape_condition(*choice.workload));
  std::vector<SolutionVariant> variants;
  for (int64_t id : dispatch_sources(plan)) {
    const Solution solution = solution_of(id);
    const auto& shapes = conditions.at(id);
    std::string when =
        shapes.size() == 1 ? shapes.front() : fmt::format("({})", fmt::join(shapes, ") or ("));
    std::string point;
    if (const auto found = solution.ext.find("template"); found != solution.ext.end())
      point = found->value("point", "");
    variants.push_back(
        {std::move(when), solution.ext.value("knobs", OrderedJson::object()), std::move(point)});
  }
  return variants;
}

std::string dispatch_plan_text(const DispatchPlan& plan) {
  std::vector<std::string> lines;
  for (const DispatchPlan::Choice& choice : plan.choices)
    lines.push_back(fmt::format("{}: #{} {:.4f} ms instead of {:.4f} ms",
                                format_axes(choice.workload->axes), choice.candidate_id,
                                choice.median_ms, choice.base_median_ms));
  return fmt::format("{}", fmt::join(lines, "; "));
}

}  // namespace kernelarc

// The end of the search: the top candidates (and a per-shape dispatch of the best, where other
// points beat it at some shapes) re-measured side by side with the baseline in interleaved
// rounds; the winner and its speedup come from this re-measurement, not from the search's.
#include <algorithm>

#include <fmt/format.h>

#include "optimize/optimize_run.h"
#include "optimize/shape_dispatch.h"

namespace kernelarc {

std::vector<int64_t> OptimizeRun::ranked_candidates() const {
  std::vector<std::pair<double, int64_t>> ranked;
  for (const auto& [key, known] : known_)
    if (known.measurement && known.measurement->passed)
      ranked.push_back({fitness_of(*known.measurement, *reference_).value, known.candidate_id});
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  if (ranked.size() > static_cast<std::size_t>(options_.final_candidates))
    ranked.resize(options_.final_candidates);
  std::vector<int64_t> ids;
  for (const auto& [fitness, id] : ranked) ids.push_back(id);
  return ids;
}

// Where other measured points of the top candidate's template beat it at a shape beyond noise,
// a per-shape dispatch of the top candidate competes as one more finalist.
std::optional<OptimizeRun::DispatchEntry> OptimizeRun::add_dispatch(
    int64_t top_id, std::vector<Finalist>& entries) {
  const Known& top = known_of(top_id);
  if (is_code(top.template_name)) return std::nullopt;
  std::vector<DispatchSource> sources;
  for (const auto& [key, known] : known_)
    if (known.template_name == top.template_name && known.measurement)
      sources.push_back({known.candidate_id, &*known.measurement});
  const DispatchPlan plan = plan_shape_dispatch(target_.problem->workloads,
                                                {top.candidate_id, &*top.measurement}, sources);
  if (plan.choices.empty()) return std::nullopt;
  const auto variants = dispatch_variants(plan, [&](int64_t id) { return *solution_of(id); });
  const Solution solution = with_variants(*solution_of(top.candidate_id), variants);
  const std::string text = dispatch_plan_text(plan);
  const int64_t id = candidate_for(
      "dispatch", top.candidate_id, dispatch_sources(plan), &solution, top.template_name, top.point,
      "per-shape dispatch of #" + std::to_string(top.candidate_id) + ": " + text);
  progress_.message(fmt::format("candidate {}: #{} with {} shape variant(s) ({})", id,
                                top.candidate_id, variants.size(), text));
  entries.push_back({id,
                     "dispatch",
                     fmt::format("{} + {} shape variant(s)", label_of(top), variants.size()),
                     solution,
                     {},
                     {},
                     0});
  return DispatchEntry{id, top.candidate_id, variants.size(), text};
}

// `entries` holds the baseline first when there is one, then the `ranked` candidates and a
// dispatch. Sets the summary's baseline and its
// finalists (those that pass again), best first.
void OptimizeRun::remeasure(std::vector<Finalist>& entries, std::size_t ranked,
                            OptimizeSummary& summary) {
  const bool any_ranked = ranked > 0;
  if (any_ranked)
    progress_.message(
        fmt::format("re-measuring the top {} and the baseline side by side, {} "
                    "interleaved rounds",
                    ranked, options_.final_rounds));
  std::vector<std::vector<std::vector<Trace>>> rounds(entries.size());
  for (int round = 0; round < options_.final_rounds && any_ranked; ++round)
    for (std::size_t i = 0; i < entries.size(); ++i)
      rounds[i].push_back(evaluator_.evaluate_final(entries[i].solution));
  std::map<std::string, double> reference = reference_.value_or(std::map<std::string, double>{});
  if (baseline_ && any_ranked) {
    Finalist& baseline = entries.front();
    baseline.measurement = pooled_measurement(rounds.front());
    baseline.traces = rounds.front().back();
    if (baseline.measurement.passed) {
      reference = reference_times(baseline.measurement);
      baseline.fitness = 1;
      summary.baseline = baseline;
    }
  }
  for (std::size_t i = baseline_ ? 1 : 0; i < entries.size(); ++i) {
    Finalist& finalist = entries[i];
    finalist.measurement = pooled_measurement(rounds[i]);
    if (!finalist.measurement.passed) {
      progress_.message(fmt::format("candidate {} failed its re-measurement ({}: {}); dropped",
                                    finalist.candidate_id, status_name(finalist.measurement.status),
                                    finalist.measurement.log));
      continue;
    }
    finalist.traces = rounds[i].back();
    finalist.fitness = fitness_of(finalist.measurement, reference).value;
    summary.finalists.push_back(std::move(finalist));
  }
  std::stable_sort(summary.finalists.begin(), summary.finalists.end(),
                   [](const Finalist& a, const Finalist& b) { return a.fitness > b.fitness; });
}

}  // namespace kernelarc

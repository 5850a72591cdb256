// What a finished run reports: the finalists, the winner's speedup over the baseline, its
// lineage through its agent's tree and its route from its template's default point.
#include <fmt/format.h>

#include "optimize/conclusions.h"
#include "optimize/optimize_run.h"

namespace kernelarc {

OptimizeSummary OptimizeRun::search_summary(const std::string& stop_reason) const {
  OptimizeSummary summary;
  summary.run_id = run_id_;
  summary.stop_reason = stop_reason;
  summary.evaluated = evaluated_;
  summary.passed = passed_;
  summary.measured = measured_;
  summary.evaluators = pool_.capacity();
  summary.search_seconds = search_seconds_;
  summary.skipped_agents = skipped_agents_;
  std::vector<const SearchTree*> trees;
  for (const auto& agent : agents_) trees.push_back(&agent->tree());
  summary.tree_shape = tree_shape(trees);
  summary.conclusions = conclusions_;
  summary.synthesis = synthesis_;
  return summary;
}

OptimizeSummary OptimizeRun::summarize(const std::string& stop_reason) {
  OptimizeSummary summary = search_summary(stop_reason);
  const std::vector<int64_t> ranked = ranked_candidates();
  std::vector<Finalist> entries;
  if (baseline_)
    entries.push_back({baseline_candidate_,
                       "baseline",
                       "baseline " + target_.baseline->name,
                       *target_.baseline,
                       {},
                       {},
                       0});
  for (int64_t id : ranked)
    entries.push_back(
        {id, known_of(id).agent, label_of(known_of(id)), *solution_of(id), {}, {}, 0});
  std::optional<DispatchEntry> dispatch;
  if (!ranked.empty()) dispatch = add_dispatch(ranked.front(), entries);
  remeasure(entries, ranked.size(), summary);
  if (!summary.finalists.empty()) {
    const Finalist& winner = summary.finalists.front();
    // The winner as the search found it: a dispatch stands for the candidate it dispatches.
    if (!dispatch || winner.candidate_id != dispatch->candidate_id) dispatch.reset();
    const int64_t searched_winner = dispatch ? dispatch->base_id : winner.candidate_id;
    if (summary.baseline) {
      summary.speedup = speedup_of(summary.baseline->measurement, winner.measurement);
      summary.kept_baseline = summary.speedup->high < 1.0;
    }
    add_lineage(summary, searched_winner, dispatch);
    summary.winner_route = winner_route(searched_winner);
  }
  return summary;
}

// The winner's lineage through its agent's tree, root first; a dispatch's through its base.
void OptimizeRun::add_lineage(OptimizeSummary& summary, int64_t searched_winner,
                              const std::optional<DispatchEntry>& dispatch) const {
  std::optional<NodeRef> at = node_of_candidate_.at(searched_winner);
  while (at) {
    const Agent& agent = *agents_[at->first];
    const SearchNode& node = agent.tree().node(at->second);
    std::string changes;
    if (node.parent && !is_code(node.template_name))
      changes = changes_text(knob_changes(agent.tree().node(*node.parent).point, node.point));
    const int64_t candidate_id = candidate_of_node_.at(*at);
    const auto stored = db_.find_candidate(candidate_id);
    summary.lineage.insert(summary.lineage.begin(),
                           {candidate_id, agent.name(), operation_name(node.operation), changes,
                            stored ? stored->note : ""});
    at = node.parent ? std::optional<NodeRef>({at->first, *node.parent}) : std::nullopt;
  }
  if (dispatch)
    summary.lineage.push_back({dispatch->candidate_id, "dispatch", "dispatch",
                               fmt::format("{} shape variant(s)", dispatch->variants),
                               dispatch->plan});
}

// The winner's route from its template's default point, when both were measured in the search
// and the route beats the default beyond both intervals: the skill a warm start needs most.
std::optional<Conclusion> OptimizeRun::winner_route(int64_t searched_winner) const {
  const Known& winner = known_of(searched_winner);
  const auto bound = bound_.find(winner.template_name);
  if (bound == bound_.end()) return std::nullopt;
  const KnobPoint start = bound->second->space().space().default_point();
  const auto origin = known_.find(point_key(winner.template_name, start));
  if (origin == known_.end() || !origin->second.measurement ||
      !origin->second.measurement->passed || !winner.measurement || start == winner.point)
    return std::nullopt;
  const Speedup speedup = speedup_of(*origin->second.measurement, *winner.measurement);
  if (speedup.low <= 1) return std::nullopt;
  return Conclusion{winner.template_name, knob_changes(start, winner.point), speedup,
                    origin->second.candidate_id, winner.candidate_id};
}

}  // namespace kernelarc

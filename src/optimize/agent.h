// One agent of the orchestrator: a strategy, its own search tree and selection policy, and its
// own random stream. It proposes candidates (its templates' default points first, then what its
// policy expands), learns only from results the orchestrator records into its tree, and drafts
// a new starting point when its best has not improved beyond noise for `plateau` results: the
// board's conclusions applied together to its best, another agent's best seen through its own
// strategy (it will then only change its own knobs of it), or a fresh restart, in turn. With
// skill hints (warm start) it first proposes each template's default point with the hints
// applied, and gives every proposal the hints' agreement with it as its MCTS prior.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "optimize/shared_view.h"
#include "optimize/skill_hint.h"
#include "optimize/strategy.h"
#include "search/selection.h"

namespace kernelarc {

struct AgentOptions {
  std::string policy = "mcts";
  uint64_t seed = 1;
  int plateau = 8;         ///< results without a significant improvement before drafting
  double min_gain = 0.01;  ///< an improvement must also exceed this relative gain
  std::vector<SkillHint> hints;  ///< retrieved skills (warm start); any template
};

struct AgentProposal {
  Proposal proposal;
  /// Set when this proposal is a drafted new start: the line for the board.
  std::optional<std::string> redirect;
  std::vector<int64_t> inspired_by_candidates;  ///< other agents' candidates it came from
};

class Agent {
 public:
  /// `templates` are the templates the strategy can act on (at least one knob it may change);
  /// InputError when empty.
  Agent(std::string name, const Strategy& strategy, std::vector<std::string> templates,
        SpaceLookup spaces, AgentOptions options);

  const std::string& name() const { return name_; }
  const Strategy& strategy() const { return *strategy_; }
  const std::vector<std::string>& templates() const { return templates_; }
  const SearchTree& tree() const { return tree_; }

  /// The next candidate, or nullopt when the agent can find no new valid point at all.
  std::optional<AgentProposal> propose(const SharedView& view);
  /// Adds the proposal to the agent's tree; returns its node id.
  int add(const Proposal& proposal);
  /// Records the node's result; returns whether it improved the agent's best beyond noise.
  bool record(int node, const CandidateResult& result);

  std::optional<int> best() const { return best_; }
  /// What `kernelarc show` prints of the agent, saved as its state.
  nlohmann::json summary() const;

 private:
  std::optional<AgentProposal> draft(const SharedView& view);
  std::optional<AgentProposal> draft_from_board(const SharedView& view);
  std::optional<AgentProposal> draft_from_other(const SharedView& view);
  std::optional<AgentProposal> draft_restart();
  std::optional<Proposal> seed_proposal() const;
  /// Each template's default point with the strongest skill hint applied, then with all of
  /// them, before the plain defaults.
  std::optional<Proposal> warm_seed_proposal() const;
  std::vector<const SkillHint*> hints_for(const std::string& template_name) const;
  /// A new root of the agent's tree at a given point (a seed or a drafted start).
  Proposal start_at(const std::string& template_name, KnobPoint point) const;

  std::string name_;
  const Strategy* strategy_;
  std::vector<std::string> templates_;
  SpaceLookup spaces_;
  AgentOptions options_;
  Rng rng_;
  SearchTree tree_;
  std::unique_ptr<SelectionPolicy> policy_;
  UniversalOperator operator_;
  std::optional<int> best_;
  double best_fitness_ = 0;
  double best_noise_ = 0;
  int since_improvement_ = 0;
  int drafts_ = 0;
};

}  // namespace kernelarc

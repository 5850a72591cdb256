// One agent of the orchestrator: a strategy, its own search tree and selection policy, and its
// own random stream. It proposes candidates (its templates' default points first, then what its
// policy expands), learns only from results the orchestrator records into its tree, and drafts
// a new starting point when its best has not improved beyond noise for `plateau` results: the
// board's conclusions applied together to its best, another agent's best seen through its own
// strategy (it will then only change its own knobs of it), or a fresh restart, in turn. An
// agent limited to some knob roles does not wait for a plateau to take another agent's best
// once that beats its own beyond noise. With skill hints (warm start) it first proposes each
// template's default point with the hints applied, and gives every proposal the hints'
// agreement with it as its MCTS prior.
//
// With a code synthesizer the agent's templates include its pseudo-template: its nodes are
// programs, numbered by a REVISION knob. The policy chooses parents as for any node; a move
// from a template node becomes, at the odds of `code_share`, a rewrite of that node's code, and
// a failed program goes back once (repair_rounds) with its error before anything else.
//
// The diagnosis steers moves too: when the parent's diagnosis (at the decisive workload, given
// with its result) suggests moving knobs the strategy may change, a move from it becomes, at
// the odds of `diagnosis_share`, one of those knobs moved one step the suggested way.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "diagnosis/diagnosis.h"
#include "optimize/shared_view.h"
#include "optimize/skill_hint.h"
#include "optimize/strategy.h"
#include "search/selection.h"

namespace kernelarc {

struct AgentOptions {
  std::string policy = "mcts";
  uint64_t seed = 1;
  int plateau = 8;               ///< results without a significant improvement before drafting
  double min_gain = 0.01;        ///< an improvement must also exceed this relative gain
  std::vector<SkillHint> hints;  ///< retrieved skills (warm start); any template
  /// The code synthesizer's pseudo-template (code_space(); one of the agent's templates), or
  /// "" without one. Its nodes are whole programs: a child is the parent's code rewritten.
  std::string code_template;
  /// The odds that a move from a template node becomes a code rewrite of that node instead.
  double code_share = 0.5;
  /// Times a failed code candidate goes back to the synthesizer with its error, in a row.
  int repair_rounds = 1;
  /// The odds that a move from a template node whose diagnosis suggests a knob the strategy may
  /// change follows a suggestion instead (when one gives a new valid point).
  double diagnosis_share = 0.5;
};

struct AgentProposal {
  Proposal proposal;
  /// Set when this proposal is a drafted new start: the line for the board.
  std::optional<std::string> redirect;
  std::vector<int64_t> inspired_by_candidates;  ///< other agents' candidates it came from
  /// Set when the move followed the parent's diagnosis: "diagnosis: raise VEC (loads are ...)".
  std::optional<std::string> note;
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
  /// Records the node's result and the knob suggestions of its diagnosis at the decisive
  /// workload; returns whether it improved the agent's best beyond noise.
  bool record(int node, const CandidateResult& result,
              std::vector<KnobSuggestion> suggestions = {});

  std::optional<int> best() const { return best_; }
  /// What `kernelarc show` prints of the agent, saved as its state.
  nlohmann::json summary() const;

 private:
  std::optional<AgentProposal> draft(const SharedView& view);
  std::optional<AgentProposal> draft_from_board(const SharedView& view);
  std::optional<AgentProposal> draft_from_other(const SharedView& view);
  std::optional<AgentProposal> draft_restart();
  /// A strategy limited to some knob roles starts again from another agent's best as soon as
  /// that beats its own beyond noise: the agents then refine the team's best along their own
  /// knobs in turn, where alone each stays in its own corner of the space (at budget 24 on the
  /// H200, six MCTS agents without this were slower than one explorer on three of six problems
  /// and faster on none).
  std::optional<AgentProposal> adopt_team_best(const SharedView& view);
  /// Whether the agent can start from another agent's best: a template point of one of its
  /// templates that its tree does not hold yet.
  bool can_start_from(const AgentBest& other) const;
  /// A new root at another agent's best, with the board line that says why.
  AgentProposal start_from(const AgentBest& other, std::string_view reason) const;
  std::optional<Proposal> seed_proposal() const;
  /// Each template's default point with the strongest skill hint applied, then with all of
  /// them, before the plain defaults.
  std::optional<Proposal> warm_seed_proposal() const;
  std::vector<const SkillHint*> hints_for(const std::string& template_name) const;
  /// `proposal` as a code rewrite of the same parent (sometimes, for a template move).
  void maybe_make_code(Proposal& proposal);
  /// `proposal` as a step its parent's diagnosis suggests (sometimes); the note when it is.
  std::optional<std::string> maybe_follow_diagnosis(Proposal& proposal);
  /// A repair of the failed code node recorded last, when its repair chain is short enough.
  std::optional<Proposal> repair_proposal();
  bool is_code(const SearchNode& node) const {
    return node.template_name == options_.code_template;
  }
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
  int code_nodes_ = 0;
  std::optional<int> failed_code_;
  std::map<int, std::vector<KnobSuggestion>> suggestions_;  ///< by node, passed ones only
  int diagnosis_moves_ = 0;
};

}  // namespace kernelarc

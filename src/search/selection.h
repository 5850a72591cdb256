// Selection policies: which node of the search tree the universal operator expands next.
//
// A policy proposes one candidate at a time; the caller adds it to the tree, measures it,
// records the result and then tells the policy (observe) so that it can update what it keeps
// beside the tree (a MAP-Elites archive, say). Policies draw only from the Rng they are given,
// so a search is reproducible from its seed.
//
//   random   restart, or expand a uniformly drawn passed node
//   beam     expand one of the B best passed nodes
//   mcts     UCT descent from a virtual root over the tree, with progressive widening; a child
//            that carries a prior is scored by PUCT instead
//   islands  K islands, each a MAP-Elites archive (best node per feature cell); parents come
//            from the island whose turn it is; every M proposals each island's best migrates
//            to the next island of the ring
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.h"
#include "search/operators.h"
#include "search/search_tree.h"

namespace kernelarc {

class SelectionPolicy {
 public:
  virtual ~SelectionPolicy() = default;
  /// The next candidate, or nullopt when the operator finds no new valid point anywhere.
  virtual std::optional<Proposal> propose(const SearchTree& tree, Rng& rng) = 0;
  /// Called after the result of `node_id` was recorded in `tree`.
  virtual void observe(const SearchTree& tree, int node_id) {
    (void)tree;
    (void)node_id;
  }
};

struct PolicyOptions {
  std::vector<std::string> templates;  ///< the templates a restart may pick
  SpaceLookup spaces;
  OperatorOptions operator_options;
  /// random: the odds of a restart when some node has passed.
  double restart_probability = 0.2;
  /// beam: how many of the best nodes are expanded.
  int beam_width = 4;
  /// mcts: the exploration constant c of UCT (c * sqrt(ln N / n)) and of PUCT. Small, because
  /// values are normalized by the range of the whole tree, in which the gaps between good nodes
  /// are narrow; with c near 1 the descent is little better than a uniform walk.
  double exploration = 0.1;
  /// mcts: a node may gain a child while it has fewer than widening * visits^0.5 children.
  double widening = 1.0;
  /// islands: how many, and after how many proposals the best of each moves to the next.
  int islands = 4;
  int migration_interval = 20;
  /// islands: the odds of expanding the island's best rather than a uniformly drawn elite.
  double exploitation = 0.3;
};

/// "random", "beam", "mcts" or "islands", the last three deepening (search/deepening.h: an
/// improving node is expanded next; random search stays the unguided control); InputError naming
/// those otherwise (and for options out of range, e.g. a beam width below 1).
std::unique_ptr<SelectionPolicy> make_policy(std::string_view name, PolicyOptions options);
/// The names make_policy accepts, in that order.
const std::vector<std::string>& policy_names();

/// The islands policy, public so that its archives can be inspected.
class IslandsPolicy : public SelectionPolicy {
 public:
  explicit IslandsPolicy(PolicyOptions options);

  std::optional<Proposal> propose(const SearchTree& tree, Rng& rng) override;
  void observe(const SearchTree& tree, int node_id) override;

  /// Island i's archive: the best passed node per feature cell.
  const std::map<FeatureCell, int>& archive(int island) const { return archives_.at(island); }
  /// The island a node was placed on, or nullopt when none saw it.
  std::optional<int> island_of(int node_id) const;
  /// Offers each island's best to the next island of the ring (what propose does every
  /// migration_interval proposals).
  void migrate(const SearchTree& tree);

 private:
  /// Puts the node in the island's archive when its cell is empty or holds a worse node.
  void offer(const SearchTree& tree, int island, int node_id);
  std::optional<int> island_best(const SearchTree& tree, int island) const;

  PolicyOptions options_;
  UniversalOperator operator_;
  std::vector<std::map<FeatureCell, int>> archives_;
  std::map<std::string, int> pending_island_;  // template + point of a proposal -> its island
  std::map<int, int> node_island_;
  int proposals_ = 0;
};

}  // namespace kernelarc

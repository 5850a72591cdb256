// Deepening: whatever the guided selection policy, a node that improved on its parent (or, without
// a parent, on the best of the tree) is expanded next. A search whose improving children went back
// into the policy's draw grew flat trees at the budgets people use (24 candidates: the memory
// agent's 14 all roots), so inheritance, sibling learning and the tree itself hardly mattered.
#pragma once

#include <memory>
#include <optional>

#include "search/operators.h"
#include "search/selection.h"

namespace kernelarc {

/// True when `node_id` passed and beat its parent, or, being a root, every other passed node.
bool improved_on_parent(const SearchTree& tree, int node_id);

class DeepeningPolicy : public SelectionPolicy {
 public:
  DeepeningPolicy(std::unique_ptr<SelectionPolicy> inner, UniversalOperator op);

  /// A child of the last improving node when its moves find a new point (not a restart), else
  /// the inner policy's proposal.
  std::optional<Proposal> propose(const SearchTree& tree, Rng& rng) override;
  void observe(const SearchTree& tree, int node_id) override;

 private:
  std::unique_ptr<SelectionPolicy> inner_;
  UniversalOperator operator_;
  std::optional<int> improving_;  ///< the node to expand next
};

}  // namespace kernelarc

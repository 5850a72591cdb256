#include "search/deepening.h"

#include <utility>

namespace kernelarc {

bool improved_on_parent(const SearchTree& tree, int node_id) {
  const SearchNode& node = tree.node(node_id);
  if (!node.fitness) return false;
  if (node.parent) {
    const auto& parent = tree.node(*node.parent).fitness;
    return parent && *node.fitness > *parent;
  }
  for (const int other : tree.recorded()) {
    const auto& fitness = tree.node(other).fitness;
    if (other != node_id && fitness && *fitness >= *node.fitness) return false;
  }
  return true;
}

DeepeningPolicy::DeepeningPolicy(std::unique_ptr<SelectionPolicy> inner, UniversalOperator op)
    : inner_(std::move(inner)), operator_(std::move(op)) {}

std::optional<Proposal> DeepeningPolicy::propose(const SearchTree& tree, Rng& rng) {
  if (const std::optional<int> node = std::exchange(improving_, std::nullopt)) {
    // The operator falls back to a restart when the node's own moves find nothing new; a
    // restart is the inner policy's to decide.
    if (auto child = operator_.propose(tree, *node, rng); child && child->parent) return child;
  }
  return inner_->propose(tree, rng);
}

void DeepeningPolicy::observe(const SearchTree& tree, int node_id) {
  inner_->observe(tree, node_id);
  // Only the latest result counts: once a child fails to improve, the policy chooses again.
  improving_ = improved_on_parent(tree, node_id) ? std::optional<int>(node_id) : std::nullopt;
}

}  // namespace kernelarc

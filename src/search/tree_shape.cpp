#include "search/tree_shape.h"

#include <algorithm>

namespace kernelarc {

TreeShape tree_shape(const std::vector<const SearchTree*>& trees) {
  TreeShape shape;
  long depth_sum = 0;
  for (const SearchTree* tree : trees) {
    for (const int id : tree->recorded()) {
      const SearchNode& node = tree->node(id);
      int depth = 0;
      for (auto parent = node.parent; parent; parent = tree->node(*parent).parent) ++depth;
      ++shape.nodes;
      depth_sum += depth;
      shape.max_depth = std::max(shape.max_depth, depth);
      if (!node.parent) continue;
      ++shape.children;
      const auto& parent_fitness = tree->node(*node.parent).fitness;
      if (node.fitness && parent_fitness && *node.fitness > *parent_fitness)
        ++shape.improving_children;
    }
  }
  if (shape.nodes > 0) shape.mean_depth = static_cast<double>(depth_sum) / shape.nodes;
  return shape;
}

}  // namespace kernelarc

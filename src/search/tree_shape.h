// How deep a search went: the mean depth of its nodes and the share of children that improved on
// their parents. A flat tree (every candidate a root) means inheritance and sibling learning never
// ran; children that rarely improve mean the moves from a parent are poorly aimed.
#pragma once

#include <vector>

#include "search/search_tree.h"

namespace kernelarc {

struct TreeShape {
  int nodes = 0;               ///< recorded nodes
  int children = 0;            ///< recorded nodes with a parent
  int improving_children = 0;  ///< children that passed faster than their parent (fitness)
  int max_depth = 0;           ///< a root is at depth 0
  double mean_depth = 0;       ///< over the recorded nodes
  double improving_share() const { return children ? double(improving_children) / children : 0; }
};

/// Over every recorded node of the trees (one per agent).
TreeShape tree_shape(const std::vector<const SearchTree*>& trees);

}  // namespace kernelarc

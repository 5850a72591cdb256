// When a search stops: a budget of evaluated candidates, a fitness target reached (e.g. a
// speed-of-light score), or a plateau (no significant improvement for a number of results).
//
// The rules read only the search tree, so whether a search stops is a pure function of what was
// recorded and in which order.
#pragma once

#include <optional>
#include <string>

#include "search/search_tree.h"

namespace kernelarc {

struct TerminationRules {
  /// Stop once this many results (passed or failed) were recorded.
  std::optional<int> max_evaluated;
  /// Stop once the best fitness reaches this value (a SOL score, say).
  std::optional<double> target_fitness;
  /// Stop after this many consecutive results without a significant improvement: a passed
  /// fitness above best + |best| * noise, where best is the last significant best and noise the
  /// larger relative noise of the two measurements. Failures count as results that did not
  /// improve; the first passed result sets the best.
  std::optional<int> plateau_results;
};

/// Why the search should stop ("budget: ...", "target: ...", "plateau: ..."), or nullopt.
/// When several rules hold, the first of budget, target, plateau is given.
std::optional<std::string> termination_reason(const SearchTree& tree,
                                              const TerminationRules& rules);

}  // namespace kernelarc

#include "search/termination.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kernelarc {
namespace {

struct Plateau {
  std::optional<int> best;  // the last significant best
  int results_since = 0;    // results recorded after it
};

bool significantly_better(const SearchNode& candidate, const SearchNode& best) {
  const double noise = std::max(candidate.noise, best.noise);
  return *candidate.fitness > *best.fitness + std::abs(*best.fitness) * noise;
}

Plateau plateau_of(const SearchTree& tree) {
  Plateau plateau;
  for (const int id : tree.recorded()) {
    const SearchNode& result = tree.node(id);
    if (result.fitness &&
        (!plateau.best || significantly_better(result, tree.node(*plateau.best)))) {
      plateau = {id, 0};
    } else {
      ++plateau.results_since;
    }
  }
  return plateau;
}

}  // namespace

std::optional<std::string> termination_reason(const SearchTree& tree,
                                              const TerminationRules& rules) {
  const int evaluated = static_cast<int>(tree.recorded().size());
  if (rules.max_evaluated && evaluated >= *rules.max_evaluated) {
    return fmt::format("budget: {} candidates evaluated (at most {})", evaluated,
                       *rules.max_evaluated);
  }
  const std::optional<int> best = tree.best();
  if (rules.target_fitness && best && *tree.node(*best).fitness >= *rules.target_fitness) {
    return fmt::format("target: best fitness {:.4g} (node {}) reached the target {:.4g}",
                       *tree.node(*best).fitness, *best, *rules.target_fitness);
  }
  if (rules.plateau_results) {
    const Plateau plateau = plateau_of(tree);
    if (plateau.results_since >= *rules.plateau_results) {
      return plateau.best
                 ? fmt::format(
                       "plateau: {} results without improving on fitness {:.4g} (node "
                       "{}) beyond its noise",
                       plateau.results_since, *tree.node(*plateau.best).fitness, *plateau.best)
                 : fmt::format("plateau: {} results and none passed", plateau.results_since);
    }
  }
  return std::nullopt;
}

}  // namespace kernelarc

#include "search/selection.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "search/deepening.h"

namespace kernelarc {
namespace {

class RandomPolicy : public SelectionPolicy {
 public:
  explicit RandomPolicy(PolicyOptions options)
      : restart_probability_(options.restart_probability),
        operator_(std::move(options.templates), std::move(options.spaces),
                  std::move(options.operator_options)) {}

  std::optional<Proposal> propose(const SearchTree& tree, Rng& rng) override {
    const std::vector<int> passed = tree.ranked();
    if (passed.empty() || rng.uniform() < restart_probability_) {
      return operator_.propose(tree, std::nullopt, rng);
    }
    return operator_.propose(tree, passed[rng.below(passed.size())], rng);
  }

 private:
  double restart_probability_;
  UniversalOperator operator_;
};

class BeamPolicy : public SelectionPolicy {
 public:
  explicit BeamPolicy(PolicyOptions options)
      : width_(options.beam_width),
        operator_(std::move(options.templates), std::move(options.spaces),
                  std::move(options.operator_options)) {}

  std::optional<Proposal> propose(const SearchTree& tree, Rng& rng) override {
    const std::vector<int> ranked = tree.ranked();
    if (ranked.empty()) return operator_.propose(tree, std::nullopt, rng);
    const std::size_t width = std::min<std::size_t>(width_, ranked.size());
    return operator_.propose(tree, ranked[rng.below(width)], rng);
  }

 private:
  int width_;
  UniversalOperator operator_;
};

class MctsPolicy : public SelectionPolicy {
 public:
  explicit MctsPolicy(PolicyOptions options)
      : exploration_(options.exploration),
        widening_(options.widening),
        operator_(std::move(options.templates), std::move(options.spaces),
                  std::move(options.operator_options)) {}

  std::optional<Proposal> propose(const SearchTree& tree, Rng& rng) override {
    // Descend from a virtual root whose children are the tree's roots; expanding it is a restart.
    std::optional<int> at;
    while (true) {
      const std::vector<int>& children = at ? tree.children(*at) : tree.roots();
      const int visits = at ? tree.node(*at).visits : static_cast<int>(tree.recorded().size());
      std::vector<int> passed;
      for (const int child : children) {
        if (tree.node(child).fitness) passed.push_back(child);
      }
      const double widest = std::max(1.0, widening_ * std::sqrt(static_cast<double>(visits)));
      if (passed.empty() || static_cast<double>(children.size()) < widest) {
        return operator_.propose(tree, at, rng);
      }
      at = most_promising(tree, passed, visits);
    }
  }

 private:
  // The child with the highest UCT (or PUCT, when it carries a prior) score; the first among
  // equals.
  int most_promising(const SearchTree& tree, const std::vector<int>& passed, int visits) const {
    const auto [low, high] = *tree.fitness_range();
    int chosen = passed.front();
    double chosen_score = -1;
    for (const int id : passed) {
      const SearchNode& child = tree.node(id);
      const double n = child.visits;
      // Mean normalized fitness of the subtree; a failed result counts as the worst.
      const double value =
          high > low ? (child.fitness_sum - child.passed_in_subtree * low) / (high - low) / n
                     : child.passed_in_subtree / n;
      const double explore = child.prior
                                 ? *child.prior * std::sqrt(static_cast<double>(visits)) / (1 + n)
                                 : std::sqrt(std::log(static_cast<double>(visits)) / n);
      const double score = value + exploration_ * explore;
      if (score > chosen_score) {
        chosen = id;
        chosen_score = score;
      }
    }
    return chosen;
  }

  double exploration_;
  double widening_;
  UniversalOperator operator_;
};

std::string proposal_key(const std::string& template_name, const KnobPoint& point) {
  return template_name + "\n" + format_knob_point(point);
}

void check_probability(double value, const char* field) {
  if (!(value >= 0 && value <= 1)) {
    throw InputError(std::string("search policy: ") + field + ": expected a value in [0, 1], got " +
                     std::to_string(value));
  }
}

void check_at_least_one(int value, const char* field) {
  if (value < 1) {
    throw InputError(std::string("search policy: ") + field + ": expected at least 1, got " +
                     std::to_string(value));
  }
}

// Returns the options when they are in range, so that a constructor can check before it moves.
const PolicyOptions& checked(const PolicyOptions& options) {
  check_probability(options.restart_probability, "restart_probability");
  check_probability(options.exploitation, "exploitation");
  check_at_least_one(options.beam_width, "beam_width");
  check_at_least_one(options.islands, "islands");
  check_at_least_one(options.migration_interval, "migration_interval");
  if (!(options.exploration >= 0)) {
    throw InputError("search policy: exploration: expected a value >= 0");
  }
  if (!(options.widening > 0)) throw InputError("search policy: widening: expected a value > 0");
  return options;
}

}  // namespace

IslandsPolicy::IslandsPolicy(PolicyOptions options)
    : options_(checked(options)),
      operator_(std::move(options.templates), std::move(options.spaces),
                std::move(options.operator_options)),
      archives_(options_.islands) {}

std::optional<int> IslandsPolicy::island_of(int node_id) const {
  const auto found = node_island_.find(node_id);
  if (found == node_island_.end()) return std::nullopt;
  return found->second;
}

std::optional<int> IslandsPolicy::island_best(const SearchTree& tree, int island) const {
  std::optional<int> best;
  for (const auto& [cell, id] : archives_[island]) {
    if (!best || *tree.node(id).fitness > *tree.node(*best).fitness ||
        (*tree.node(id).fitness == *tree.node(*best).fitness && id < *best)) {
      best = id;
    }
  }
  return best;
}

void IslandsPolicy::offer(const SearchTree& tree, int island, int node_id) {
  const SearchNode& node = tree.node(node_id);
  if (!node.fitness) return;
  const auto [slot, inserted] = archives_[island].try_emplace(node.features, node_id);
  if (!inserted && *node.fitness > *tree.node(slot->second).fitness) slot->second = node_id;
}

void IslandsPolicy::migrate(const SearchTree& tree) {
  const int count = static_cast<int>(archives_.size());
  std::vector<std::optional<int>> bests;
  for (int island = 0; island < count; ++island) bests.push_back(island_best(tree, island));
  for (int island = 0; island < count; ++island) {
    if (bests[island]) offer(tree, (island + 1) % count, *bests[island]);
  }
}

std::optional<Proposal> IslandsPolicy::propose(const SearchTree& tree, Rng& rng) {
  const int island = proposals_ % static_cast<int>(archives_.size());
  ++proposals_;
  if (proposals_ % options_.migration_interval == 0) migrate(tree);

  const std::map<FeatureCell, int>& archive = archives_[island];
  std::optional<int> parent;
  std::optional<int> inspiration;
  if (!archive.empty()) {
    std::vector<int> elites;
    for (const auto& [cell, id] : archive) elites.push_back(id);
    parent = rng.uniform() < options_.exploitation ? *island_best(tree, island)
                                                   : elites[rng.below(elites.size())];
    std::vector<int> partners;
    for (const int id : elites) {
      if (id != *parent && tree.node(id).template_name == tree.node(*parent).template_name) {
        partners.push_back(id);
      }
    }
    if (!partners.empty()) inspiration = partners[rng.below(partners.size())];
  }
  std::optional<Proposal> proposal = operator_.propose(tree, parent, rng, inspiration);
  if (proposal) pending_island_[proposal_key(proposal->template_name, proposal->point)] = island;
  return proposal;
}

void IslandsPolicy::observe(const SearchTree& tree, int node_id) {
  const SearchNode& node = tree.node(node_id);
  const auto pending = pending_island_.find(proposal_key(node.template_name, node.point));
  int island = node_id % static_cast<int>(archives_.size());
  if (pending != pending_island_.end()) {
    island = pending->second;
    pending_island_.erase(pending);
  } else if (const auto parent_island = node.parent ? island_of(*node.parent) : std::nullopt) {
    // A node this policy did not propose (a seed, another agent's) joins its parent's island.
    island = *parent_island;
  }
  node_island_[node_id] = island;
  offer(tree, island, node_id);
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = {"random", "beam", "mcts", "islands"};
  return names;
}

namespace {

std::unique_ptr<SelectionPolicy> make_inner_policy(std::string_view name, PolicyOptions options) {
  if (name == "random") return std::make_unique<RandomPolicy>(std::move(options));
  if (name == "beam") return std::make_unique<BeamPolicy>(std::move(options));
  if (name == "mcts") return std::make_unique<MctsPolicy>(std::move(options));
  if (name == "islands") return std::make_unique<IslandsPolicy>(std::move(options));
  return nullptr;
}

}  // namespace

std::unique_ptr<SelectionPolicy> make_policy(std::string_view name, PolicyOptions options) {
  checked(options);
  // Random search stays unguided: it is the control the guided policies are measured against.
  if (name == "random") return make_inner_policy(name, std::move(options));
  const PolicyOptions kept = options;  // the inner policy takes the options
  if (auto inner = make_inner_policy(name, std::move(options))) {
    return std::make_unique<DeepeningPolicy>(
        std::move(inner), UniversalOperator(kept.templates, kept.spaces, kept.operator_options));
  }
  std::string known;
  for (const std::string& candidate : policy_names()) {
    known += (known.empty() ? "" : ", ") + candidate;
  }
  throw InputError("search policy: unknown policy \"" + std::string(name) + "\" (expected one of " +
                   known + ")");
}

}  // namespace kernelarc

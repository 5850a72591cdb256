#include "search/operators.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <utility>

#include "core/error.h"

namespace kernelarc {
namespace {

// Fisher-Yates with the portable generator, so the order is the same on every platform.
template <typename T>
void shuffle(std::vector<T>& items, Rng& rng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[rng.below(i)]);
  }
}

std::size_t draw_weighted(const std::vector<double>& weights, Rng& rng) {
  double total = 0;
  for (const double weight : weights) total += weight;
  double draw = rng.uniform() * total;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (draw < weights[i]) return i;
    draw -= weights[i];
  }
  // Rounding can leave the draw just past the last positive weight.
  for (std::size_t i = weights.size(); i > 0; --i) {
    if (weights[i - 1] > 0) return i - 1;
  }
  return 0;
}

// The point with the step's knob moved; nullopt when the space has no such knob, the step
// leaves the domain or stays where it is.
std::optional<KnobPoint> stepped_point(const KnobSpace& space, const KnobPoint& point,
                                       const KnobStep& step) {
  const std::optional<std::size_t> index = space.knob_index(step.knob);
  const auto current = point.find(step.knob);
  if (!index || current == point.end()) return std::nullopt;
  const Knob& knob = space.knobs()[*index];
  KnobPoint moved = point;
  if (step.value) {
    if (!knob.index_of(*step.value) || *step.value == current->second) return std::nullopt;
    moved[step.knob] = *step.value;
    return moved;
  }
  const std::optional<uint64_t> at = knob.index_of(current->second);
  if (!at || knob.type() == KnobType::Enum || step.offset == 0) return std::nullopt;
  const int64_t to = static_cast<int64_t>(*at) + step.offset;
  if (to < 0 || static_cast<uint64_t>(to) >= knob.size()) return std::nullopt;
  moved[step.knob] = knob.value_at(static_cast<uint64_t>(to));
  return moved;
}

}  // namespace

UniversalOperator::UniversalOperator(std::vector<std::string> templates, SpaceLookup spaces,
                                     OperatorOptions options)
    : templates_(std::move(templates)), spaces_(std::move(spaces)), options_(std::move(options)) {
  if (templates_.empty()) throw InputError("search operator: templates: expected at least one");
  const OperatorWeights& w = options_.weights;
  if (w.inherit < 0 || w.siblings < 0 || w.crossover < 0 || w.restart < 0 ||
      w.inherit + w.siblings + w.crossover + w.restart <= 0) {
    throw InputError("search operator: weights: expected non-negative odds, not all zero");
  }
  if (options_.max_tries < 1) throw InputError("search operator: max_tries: expected >= 1");
  for (const std::string& name : templates_) space(name);
}

const ConstrainedSpace& UniversalOperator::space(const std::string& template_name) const {
  const ConstrainedSpace* found = spaces_ ? spaces_(template_name) : nullptr;
  if (found == nullptr) {
    throw InputError("search operator: template '" + template_name + "' has no knob space");
  }
  return *found;
}

bool UniversalOperator::may_change(const ConstrainedSpace& knobs, const std::string& name) const {
  if (!options_.mutable_knobs) return true;
  const std::optional<std::size_t> index = knobs.space().knob_index(name);
  return index && options_.mutable_knobs(knobs.space().knobs()[*index]);
}

Proposal UniversalOperator::child_of(const SearchNode& parent, KnobPoint point,
                                     Operation operation) const {
  Proposal proposal;
  proposal.parent = parent.id;
  proposal.agent = options_.agent;
  proposal.template_name = parent.template_name;
  proposal.point = std::move(point);
  proposal.operation = operation;
  return proposal;
}

std::optional<Proposal> UniversalOperator::propose(const SearchTree& tree,
                                                   std::optional<int> parent, Rng& rng,
                                                   std::optional<int> inspiration) const {
  if (!parent) return restart(tree, rng);
  const OperatorWeights& w = options_.weights;
  const std::array moves = {Operation::Inherit, Operation::LearnFromSiblings, Operation::Crossover,
                            Operation::Restart};
  const Operation drawn =
      moves[draw_weighted({w.inherit, w.siblings, w.crossover, w.restart}, rng)];
  if (auto proposal = apply(drawn, tree, parent, rng, inspiration)) return proposal;
  // The drawn move found nothing new: the parent's own moves first, a restart last.
  for (const Operation fallback : moves) {
    if (fallback == drawn) continue;
    if (auto proposal = apply(fallback, tree, parent, rng, inspiration)) return proposal;
  }
  return std::nullopt;
}

std::optional<Proposal> UniversalOperator::apply(Operation operation, const SearchTree& tree,
                                                 std::optional<int> parent, Rng& rng,
                                                 std::optional<int> inspiration) const {
  if (operation == Operation::Restart) return restart(tree, rng);
  if (operation == Operation::Seed) {
    throw InputError("search operator: 'seed' is not a move of the operator");
  }
  if (operation == Operation::Diagnosis) {
    throw InputError("search operator: 'diagnosis' needs the steps to take (step())");
  }
  if (!parent) {
    throw InputError(std::string("search operator: '") + operation_name(operation) +
                     "' needs a parent");
  }
  const SearchNode& node = tree.node(*parent);
  switch (operation) {
    case Operation::Inherit:
      return inherit(tree, node, rng);
    case Operation::LearnFromSiblings:
      return learn_from_siblings(tree, node, rng);
    default:
      return crossover(tree, node, rng, inspiration);
  }
}

std::optional<SteppedProposal> UniversalOperator::step(const SearchTree& tree, int parent,
                                                       const std::vector<KnobStep>& steps,
                                                       Rng& rng) const {
  const SearchNode& node = tree.node(parent);
  const ConstrainedSpace& knobs = space(node.template_name);
  std::vector<std::size_t> order(steps.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  shuffle(order, rng);
  for (const std::size_t i : order) {
    if (!may_change(knobs, steps[i].knob)) continue;
    std::optional<KnobPoint> point = stepped_point(knobs.space(), node.point, steps[i]);
    if (!point || !knobs.is_valid(*point) || tree.contains(node.template_name, *point)) continue;
    return SteppedProposal{child_of(node, std::move(*point), Operation::Diagnosis), i};
  }
  return std::nullopt;
}

std::optional<Proposal> UniversalOperator::inherit(const SearchTree& tree, const SearchNode& parent,
                                                   Rng& rng) const {
  const ConstrainedSpace& knobs = space(parent.template_name);
  for (int i = 0; i < options_.max_tries; ++i) {
    std::optional<KnobPoint> point = knobs.mutate(parent.point, rng, options_.mutable_knobs);
    if (!point) break;  // no valid point differs from the parent's
    if (!tree.contains(parent.template_name, *point)) {
      return child_of(parent, std::move(*point), Operation::Inherit);
    }
  }
  // Random mutations keep hitting known points: the new one-step neighbours, if any are left.
  std::vector<KnobPoint> fresh;
  for (KnobPoint& point : knobs.neighbours(parent.point, options_.mutable_knobs)) {
    if (!tree.contains(parent.template_name, point)) fresh.push_back(std::move(point));
  }
  if (fresh.empty()) return std::nullopt;
  return child_of(parent, std::move(fresh[rng.below(fresh.size())]), Operation::Inherit);
}

std::optional<Proposal> UniversalOperator::learn_from_siblings(const SearchTree& tree,
                                                               const SearchNode& parent,
                                                               Rng& rng) const {
  std::optional<int> teacher;
  for (const int sibling : tree.siblings(parent.id)) {
    const SearchNode& candidate = tree.node(sibling);
    if (!candidate.fitness || candidate.template_name != parent.template_name) continue;
    if (!teacher || *candidate.fitness > *tree.node(*teacher).fitness) teacher = sibling;
  }
  if (!teacher) return std::nullopt;
  const SearchNode& best = tree.node(*teacher);
  const ConstrainedSpace& knobs = space(parent.template_name);
  std::vector<std::string> differing;
  for (const auto& [name, value] : best.point) {
    const auto own = parent.point.find(name);
    if (own != parent.point.end() && own->second != value && may_change(knobs, name))
      differing.push_back(name);
  }
  shuffle(differing, rng);
  for (const std::string& name : differing) {
    KnobPoint point = parent.point;
    point[name] = best.point.at(name);
    if (knobs.is_valid(point) && !tree.contains(parent.template_name, point)) {
      Proposal proposal = child_of(parent, std::move(point), Operation::LearnFromSiblings);
      proposal.inspired_by = {best.id};
      return proposal;
    }
  }
  return std::nullopt;
}

std::optional<Proposal> UniversalOperator::crossover(const SearchTree& tree,
                                                     const SearchNode& parent, Rng& rng,
                                                     std::optional<int> inspiration) const {
  std::optional<int> partner;
  if (inspiration && *inspiration != parent.id &&
      tree.node(*inspiration).template_name == parent.template_name) {
    partner = inspiration;
  } else {
    std::vector<int> candidates;
    for (const int id : tree.ranked(parent.template_name)) {
      if (id != parent.id) candidates.push_back(id);
    }
    if (candidates.empty()) return std::nullopt;
    partner = candidates[rng.below(candidates.size())];
  }
  const SearchNode& other = tree.node(*partner);
  const ConstrainedSpace& knobs = space(parent.template_name);
  // Uniform crossover: each admitted knob from either parent with even odds.
  std::vector<std::pair<std::string, KnobValue>> offered;
  for (const auto& [name, value] : other.point) {
    if (may_change(knobs, name)) offered.emplace_back(name, value);
  }
  for (int i = 0; i < options_.max_tries; ++i) {
    KnobPoint point = parent.point;
    for (const auto& [name, value] : offered) {
      if (rng.below(2) == 1) point[name] = value;
    }
    if (point == parent.point || point == other.point) continue;
    if (knobs.is_valid(point) && !tree.contains(parent.template_name, point)) {
      Proposal proposal = child_of(parent, std::move(point), Operation::Crossover);
      proposal.inspired_by = {other.id};
      return proposal;
    }
  }
  return std::nullopt;
}

std::optional<Proposal> UniversalOperator::restart(const SearchTree& tree, Rng& rng) const {
  const auto fresh_proposal = [&](const std::string& name, KnobPoint point) {
    Proposal proposal;
    proposal.agent = options_.agent;
    proposal.template_name = name;
    proposal.point = std::move(point);
    proposal.operation = Operation::Restart;
    return proposal;
  };
  for (int i = 0; i < options_.max_tries; ++i) {
    const std::string& name = templates_[rng.below(templates_.size())];
    std::optional<KnobPoint> point = space(name).sample(rng);
    if (point && !tree.contains(name, *point)) return fresh_proposal(name, std::move(*point));
  }
  // The sampled points are all known: the space may be nearly exhausted, so look for the points
  // left, template by template in a random order, and pick one of a template's uniformly.
  std::vector<std::string> order = templates_;
  shuffle(order, rng);
  for (const std::string& name : order) {
    std::vector<KnobPoint> left;
    uint64_t visited = 0;
    space(name).for_each_valid([&](const KnobPoint& point) {
      if (!tree.contains(name, point)) left.push_back(point);
      return ++visited < options_.enumeration_limit;
    });
    if (!left.empty()) return fresh_proposal(name, std::move(left[rng.below(left.size())]));
  }
  return std::nullopt;
}

}  // namespace kernelarc

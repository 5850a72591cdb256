// The universal operator of the template synthesizer (KernelEvolve's name for the one
// transformation that turns a node of the search tree into a new candidate): it inherits from
// a parent (a mutation of its knob point), learns from the parent's siblings (one knob taken
// from the best of them), crosses the parent with an "inspired by" node of the same template,
// or restarts (a fresh template and point).
//
// OperatorOptions::mutable_knobs limits the parent's moves to some knobs (a strategy agent's
// roles): inherit and learn-from-siblings change only admitted knobs, and a crossover child takes
// only those from its partner. A restart samples whole points, so it is not limited.
//
// A directed step (step()) is the parent's point with one named knob moved one place along its
// domain, or set to a given value: how an agent follows its parent's diagnosis. It is limited
// by mutable_knobs like the parent's other moves.
//
// Every proposal is a valid point of its template's space that is not yet in the tree (for that
// template), so a search never spends a measurement twice. When the move drawn cannot find such
// a point, the others are tried, restart last; nullopt means every template's space is
// exhausted (or too large to enumerate for the last, exhaustive try of a restart).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "search/search_tree.h"
#include "synth/constrained_space.h"

namespace kernelarc {

/// The space of a template by name; nullptr when the template is unknown.
using SpaceLookup = std::function<const ConstrainedSpace*(const std::string& template_name)>;

/// Relative odds of the moves when a parent is given (they need not sum to 1).
struct OperatorWeights {
  double inherit = 0.55;
  double siblings = 0.15;
  double crossover = 0.2;
  double restart = 0.1;
};

struct OperatorOptions {
  std::string agent = "synth";  ///< written into every proposal
  OperatorWeights weights;
  int max_tries = 32;  ///< random draws per move before it gives up
  /// A restart whose random draws all hit known points walks each template's valid points,
  /// visiting at most this many, to find the ones not yet in the tree.
  uint64_t enumeration_limit = uint64_t{1} << 16;
  /// The knobs a move from a parent may change; empty = every knob (and then the draws are
  /// exactly those without a filter).
  KnobFilter mutable_knobs;
};

/// A directed move of one knob (the operator's form of a diagnosis' suggestion).
struct KnobStep {
  std::string knob;
  /// Places along the knob's ascending domain (+1: the next larger value, -1: the next smaller);
  /// ignored when `value` is given. An enum's order means nothing, so only a value moves one.
  int offset = 1;
  std::optional<KnobValue> value;
};

/// A child made by step(), and the index of the step that made it.
struct SteppedProposal {
  Proposal proposal;
  std::size_t step = 0;
};

class UniversalOperator {
 public:
  /// InputError when `templates` is empty, a weight is negative or all are zero, or a template
  /// has no space.
  UniversalOperator(std::vector<std::string> templates, SpaceLookup spaces,
                    OperatorOptions options = {});

  const std::vector<std::string>& templates() const { return templates_; }
  const ConstrainedSpace& space(const std::string& template_name) const;

  /// A child of `parent` by a move drawn by the weights (falling back on the others), or a
  /// restart when there is no parent. `inspiration` is the crossover partner to prefer; by
  /// default a random passed node of the parent's template.
  std::optional<Proposal> propose(const SearchTree& tree, std::optional<int> parent, Rng& rng,
                                  std::optional<int> inspiration = std::nullopt) const;

  /// One move only, without fallback; nullopt when it finds no new valid point. Inherit,
  /// LearnFromSiblings and Crossover need a parent (InputError otherwise); Seed is not a move,
  /// and Diagnosis needs its steps (step()).
  std::optional<Proposal> apply(Operation operation, const SearchTree& tree,
                                std::optional<int> parent, Rng& rng,
                                std::optional<int> inspiration = std::nullopt) const;

  /// A child of node `parent` by the first of `steps`, tried in a random order, that moves a knob
  /// mutable_knobs admits to a valid point not yet in the tree; its operation is Diagnosis.
  /// nullopt when no step does (a knob the template lacks, the end of a domain, a value outside
  /// it, a constraint, a known point).
  std::optional<SteppedProposal> step(const SearchTree& tree, int parent,
                                      const std::vector<KnobStep>& steps, Rng& rng) const;

 private:
  std::optional<Proposal> inherit(const SearchTree& tree, const SearchNode& parent, Rng& rng) const;
  std::optional<Proposal> learn_from_siblings(const SearchTree& tree, const SearchNode& parent,
                                              Rng& rng) const;
  std::optional<Proposal> crossover(const SearchTree& tree, const SearchNode& parent, Rng& rng,
                                    std::optional<int> inspiration) const;
  std::optional<Proposal> restart(const SearchTree& tree, Rng& rng) const;
  /// Whether a move may change the knob `name` of `knobs` (mutable_knobs admits it).
  bool may_change(const ConstrainedSpace& knobs, const std::string& name) const;
  Proposal child_of(const SearchNode& parent, KnobPoint point, Operation operation) const;

  std::vector<std::string> templates_;
  SpaceLookup spaces_;
  OperatorOptions options_;
};

}  // namespace kernelarc

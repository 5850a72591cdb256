// The search engine's memory: every candidate ever proposed, as a tree (a child points at the
// node it was derived from; a restart is a new root), with each candidate's measured outcome.
//
// The tree is the one state the selection policies, the universal operator and the termination
// rules share. It performs no I/O and draws no random numbers, so a search is deterministic for
// its seed. Besides the results it keeps, per node, the statistics a tree search backs up: how
// many results were recorded in its subtree and the sum of their fitness.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "synth/knob_point.h"

namespace kernelarc {

enum class CandidateStatus { Pending, Passed, Failed };
/// "pending", "passed", "failed".
const char* candidate_status_name(CandidateStatus status);

/// How a proposal was derived from the tree (the universal operator's moves; Diagnosis is a
/// step of one knob that the parent's diagnosis suggested).
enum class Operation { Inherit, LearnFromSiblings, Crossover, Restart, Seed, Diagnosis };
/// "inherit", "siblings", "crossover", "restart", "seed", "diagnosis".
const char* operation_name(Operation operation);

/// Cells of a MAP-Elites archive, e.g. {"bottleneck": 2, "occupancy_bucket": 3}.
using FeatureCell = std::map<std::string, int64_t>;

/// A candidate not yet in the tree.
struct Proposal {
  std::optional<int> parent;     ///< absent for a restart or a seed
  std::vector<int> inspired_by;  ///< nodes whose values it borrows (siblings, crossover)
  std::string agent;             ///< who proposed it, e.g. "synth"
  std::string template_name;
  KnobPoint point;
  Operation operation = Operation::Seed;
  std::optional<double> prior;  ///< the proposer's belief in it, in [0, 1] (PUCT)
};

struct CandidateResult {
  bool passed = false;
  std::optional<double> fitness;  ///< required when passed; higher is better
  double noise = 0;               ///< relative half-width of the fitness' confidence interval
  FeatureCell features;
};

struct SearchNode {
  int id = 0;
  std::optional<int> parent;
  std::vector<int> inspired_by;
  std::string agent;
  std::string template_name;
  KnobPoint point;
  Operation operation = Operation::Seed;
  std::optional<double> prior;
  CandidateStatus status = CandidateStatus::Pending;
  std::optional<double> fitness;  ///< set exactly when passed
  double noise = 0;
  FeatureCell features;
  std::vector<int> children;  ///< in insertion order
  /// Results recorded in this node's subtree (itself included): the MCTS visit count.
  int visits = 0;
  /// Of those, how many passed and the sum of their fitness (the MCTS value).
  int passed_in_subtree = 0;
  double fitness_sum = 0;
};

class SearchTree {
 public:
  /// Adds a pending node and returns its id (ids are 0, 1, 2, ... in insertion order).
  /// InputError when the parent or an inspiration is unknown, or the template and point are
  /// already in the tree.
  int add(Proposal proposal);
  /// Records the outcome of a pending node and backs its visit and fitness up to the root.
  /// InputError when the node is unknown or not pending, when a passed result has no fitness,
  /// or a failed one has one.
  void record(int id, CandidateResult result);

  std::size_t size() const { return nodes_.size(); }
  /// InputError for an unknown id. The reference lasts until the next add().
  const SearchNode& node(int id) const;
  const std::vector<SearchNode>& nodes() const { return nodes_; }
  /// Node ids in the order their results were recorded.
  const std::vector<int>& recorded() const { return recorded_; }
  /// Nodes without a parent, in insertion order.
  const std::vector<int>& roots() const { return roots_; }

  bool contains(const std::string& template_name, const KnobPoint& point) const;
  const std::vector<int>& children(int id) const { return node(id).children; }
  /// The other children of the node's parent (the other roots for a root), in insertion order.
  std::vector<int> siblings(int id) const;
  /// Passed nodes, best first (ties: lower id first); `template_name` filters when non-empty.
  std::vector<int> ranked(const std::string& template_name = {}) const;
  /// The passed node with the highest fitness (the lowest id among equals), or nullopt.
  std::optional<int> best(const std::string& template_name = {}) const;
  /// The lowest and highest fitness among passed nodes, or nullopt when none passed.
  std::optional<std::pair<double, double>> fitness_range() const;

 private:
  static std::string key(const std::string& template_name, const KnobPoint& point);
  void check_id(int id, const char* what) const;

  std::vector<SearchNode> nodes_;
  std::vector<int> roots_;
  std::vector<int> recorded_;
  std::set<std::string> keys_;
  std::optional<std::pair<double, double>> fitness_range_;
};

}  // namespace kernelarc

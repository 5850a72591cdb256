#include "search/search_tree.h"

#include <algorithm>

#include "core/error.h"

namespace kernelarc {

const char* candidate_status_name(CandidateStatus status) {
  switch (status) {
    case CandidateStatus::Pending:
      return "pending";
    case CandidateStatus::Passed:
      return "passed";
    case CandidateStatus::Failed:
      return "failed";
  }
  return "?";
}

const char* operation_name(Operation operation) {
  switch (operation) {
    case Operation::Inherit:
      return "inherit";
    case Operation::LearnFromSiblings:
      return "siblings";
    case Operation::Crossover:
      return "crossover";
    case Operation::Restart:
      return "restart";
    case Operation::Seed:
      return "seed";
    case Operation::Diagnosis:
      return "diagnosis";
  }
  return "?";
}

std::string SearchTree::key(const std::string& template_name, const KnobPoint& point) {
  // A newline cannot occur in a template name or a canonical point.
  return template_name + "\n" + format_knob_point(point);
}

void SearchTree::check_id(int id, const char* what) const {
  if (id < 0 || static_cast<std::size_t>(id) >= nodes_.size()) {
    throw InputError(std::string("search tree: ") + what + ": no node " + std::to_string(id) +
                     " (the tree has " + std::to_string(nodes_.size()) + ")");
  }
}

int SearchTree::add(Proposal proposal) {
  if (proposal.parent) check_id(*proposal.parent, "parent");
  for (const int inspiration : proposal.inspired_by) check_id(inspiration, "inspired_by");
  std::string point_key = key(proposal.template_name, proposal.point);
  if (keys_.contains(point_key)) {
    throw InputError("search tree: template '" + proposal.template_name + "' point \"" +
                     format_knob_point(proposal.point) + "\" is already in the tree");
  }
  keys_.insert(std::move(point_key));

  SearchNode node;
  node.id = static_cast<int>(nodes_.size());
  node.parent = proposal.parent;
  node.inspired_by = std::move(proposal.inspired_by);
  node.agent = std::move(proposal.agent);
  node.template_name = std::move(proposal.template_name);
  node.point = std::move(proposal.point);
  node.operation = proposal.operation;
  node.prior = proposal.prior;
  if (node.parent) {
    nodes_[*node.parent].children.push_back(node.id);
  } else {
    roots_.push_back(node.id);
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().id;
}

void SearchTree::record(int id, CandidateResult result) {
  check_id(id, "record");
  SearchNode& target = nodes_[id];
  const std::string where = "search tree: record node " + std::to_string(id);
  if (target.status != CandidateStatus::Pending) {
    throw InputError(where + ": already " + candidate_status_name(target.status));
  }
  if (result.passed != result.fitness.has_value()) {
    throw InputError(where + (result.passed ? ": a passed result needs a fitness"
                                            : ": a failed result has no fitness"));
  }
  target.status = result.passed ? CandidateStatus::Passed : CandidateStatus::Failed;
  target.fitness = result.fitness;
  target.noise = result.noise;
  target.features = std::move(result.features);
  recorded_.push_back(id);
  if (target.fitness) {
    const double fitness = *target.fitness;
    fitness_range_ = fitness_range_ ? std::pair(std::min(fitness_range_->first, fitness),
                                                std::max(fitness_range_->second, fitness))
                                    : std::pair(fitness, fitness);
  }
  for (std::optional<int> at = id; at; at = nodes_[*at].parent) {
    SearchNode& ancestor = nodes_[*at];
    ++ancestor.visits;
    if (target.fitness) {
      ++ancestor.passed_in_subtree;
      ancestor.fitness_sum += *target.fitness;
    }
  }
}

const SearchNode& SearchTree::node(int id) const {
  check_id(id, "node");
  return nodes_[id];
}

bool SearchTree::contains(const std::string& template_name, const KnobPoint& point) const {
  return keys_.contains(key(template_name, point));
}

std::vector<int> SearchTree::siblings(int id) const {
  const SearchNode& of = node(id);
  const std::vector<int>& family = of.parent ? nodes_[*of.parent].children : roots_;
  std::vector<int> others;
  for (const int other : family) {
    if (other != id) others.push_back(other);
  }
  return others;
}

std::vector<int> SearchTree::ranked(const std::string& template_name) const {
  std::vector<int> passed;
  for (const SearchNode& candidate : nodes_) {
    if (candidate.fitness && (template_name.empty() || candidate.template_name == template_name)) {
      passed.push_back(candidate.id);
    }
  }
  std::stable_sort(passed.begin(), passed.end(),
                   [&](int a, int b) { return *nodes_[a].fitness > *nodes_[b].fitness; });
  return passed;
}

std::optional<int> SearchTree::best(const std::string& template_name) const {
  std::optional<int> best;
  for (const SearchNode& candidate : nodes_) {
    if (!candidate.fitness) continue;
    if (!template_name.empty() && candidate.template_name != template_name) continue;
    if (!best || *candidate.fitness > *nodes_[*best].fitness) best = candidate.id;
  }
  return best;
}

std::optional<std::pair<double, double>> SearchTree::fitness_range() const {
  return fitness_range_;
}

}  // namespace kernelarc

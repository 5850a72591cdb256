// Shares a candidate budget between agents (the template synthesizer, an LLM writer, ...):
// discounted UCB1 over each agent's recent verified gains, with a floor share that keeps every
// agent in play, since an agent that found nothing lately may be the one that finds the next
// step once the others plateau.
//
// Rewards: an improving result earns its gain divided by the largest gain seen so far (so
// rewards lie in [0, 1] whatever the unit of fitness), anything else earns 0. Every record
// discounts all past statistics by `discount`, so the bandit follows agents whose luck changes.
// Ties between equal scores are broken by the bandit's own generator, seeded at construction.
// Advice (the diagnosis of the best candidate, turned into the agents whose strategy addresses
// it) adds a bonus to those agents' scores.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"

namespace kernelarc {

struct BanditOptions {
  double discount = 0.95;    ///< in (0, 1]; 1 is plain UCB1
  double exploration = 0.5;  ///< c of the bonus c * sqrt(ln n / n_i)
  double floor_share = 0.1;  ///< each agent gets at least this fraction of the allocations
  uint64_t seed = 0;
};

class BudgetBandit {
 public:
  /// InputError when there is no agent, a name repeats, the discount is outside (0, 1], the
  /// exploration is negative, or the floor shares add up to more than the whole budget.
  explicit BudgetBandit(std::vector<std::string> agents, BanditOptions options = {});

  /// The agent that proposes the next candidate: the one furthest below its floor share when
  /// any is, else the highest discounted UCB1 score (an agent without results first).
  const std::string& next_agent();
  /// The outcome of a candidate of `agent`: whether it improved the best, and by how much (e.g.
  /// the relative gain in fitness; ignored when it did not improve). InputError for an unknown
  /// agent.
  void record(const std::string& agent, bool improved, double gain);
  /// Adds `bonus` to the scores of `agents` (those whose strategy addresses what limits the
  /// best candidate) until the next advice; the floor shares still hold. InputError for an
  /// unknown agent or a negative bonus.
  void advise(const std::vector<std::string>& agents, double bonus);

  const std::vector<std::string>& agents() const { return agents_; }
  /// How many times next_agent returned each agent, in the order of agents().
  const std::vector<int64_t>& allocations() const { return allocations_; }

 private:
  std::size_t index_of(const std::string& agent) const;
  double score(std::size_t agent, double total_weight) const;

  std::vector<std::string> agents_;
  BanditOptions options_;
  Rng rng_;
  std::vector<int64_t> allocations_;
  std::vector<double> weights_;  // discounted number of results per agent
  std::vector<double> gains_;    // discounted sum of raw gains per agent
  std::vector<double> advice_;   // bonus per agent from the latest advice
  double largest_gain_ = 0;
};

}  // namespace kernelarc

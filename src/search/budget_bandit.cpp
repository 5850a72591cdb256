#include "search/budget_bandit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "core/error.h"

namespace kernelarc {

BudgetBandit::BudgetBandit(std::vector<std::string> agents, BanditOptions options)
    : agents_(std::move(agents)),
      options_(options),
      rng_(options.seed),
      allocations_(agents_.size(), 0),
      weights_(agents_.size(), 0),
      gains_(agents_.size(), 0),
      advice_(agents_.size(), 0) {
  if (agents_.empty()) throw InputError("budget bandit: agents: expected at least one");
  if (std::set<std::string>(agents_.begin(), agents_.end()).size() != agents_.size()) {
    throw InputError("budget bandit: agents: a name appears twice");
  }
  if (!(options_.discount > 0 && options_.discount <= 1)) {
    throw InputError("budget bandit: discount: expected a value in (0, 1]");
  }
  if (!(options_.exploration >= 0)) {
    throw InputError("budget bandit: exploration: expected a value >= 0");
  }
  if (!(options_.floor_share >= 0 && options_.floor_share * agents_.size() <= 1)) {
    throw InputError("budget bandit: floor_share: expected a value in [0, 1 / " +
                     std::to_string(agents_.size()) + "] for " + std::to_string(agents_.size()) +
                     " agents");
  }
}

std::size_t BudgetBandit::index_of(const std::string& agent) const {
  const auto found = std::find(agents_.begin(), agents_.end(), agent);
  if (found == agents_.end()) throw InputError("budget bandit: unknown agent '" + agent + "'");
  return static_cast<std::size_t>(found - agents_.begin());
}

double BudgetBandit::score(std::size_t agent, double total_weight) const {
  if (weights_[agent] <= 0) return std::numeric_limits<double>::infinity();
  const double mean = largest_gain_ > 0 ? gains_[agent] / largest_gain_ / weights_[agent] : 0.0;
  return mean + advice_[agent] +
         options_.exploration * std::sqrt(std::log(std::max(total_weight, 1.0)) / weights_[agent]);
}

const std::string& BudgetBandit::next_agent() {
  int64_t total = 0;
  for (const int64_t count : allocations_) total += count;
  const double floor = options_.floor_share * static_cast<double>(total + 1);

  // The agent furthest below its floor, else the best score; equals are drawn uniformly.
  std::vector<std::size_t> chosen;
  double chosen_value = -std::numeric_limits<double>::infinity();
  const auto consider = [&](std::size_t agent, double value) {
    if (value > chosen_value) {
      chosen = {agent};
      chosen_value = value;
    } else if (value == chosen_value) {
      chosen.push_back(agent);
    }
  };
  for (std::size_t agent = 0; agent < agents_.size(); ++agent) {
    const double shortfall = floor - static_cast<double>(allocations_[agent]);
    if (shortfall > 0) consider(agent, shortfall);
  }
  if (chosen.empty()) {
    double total_weight = 0;
    for (const double weight : weights_) total_weight += weight;
    for (std::size_t agent = 0; agent < agents_.size(); ++agent) {
      consider(agent, score(agent, total_weight));
    }
  }
  const std::size_t agent = chosen[rng_.below(chosen.size())];
  ++allocations_[agent];
  return agents_[agent];
}

void BudgetBandit::advise(const std::vector<std::string>& agents, double bonus) {
  if (!(bonus >= 0)) throw InputError("budget bandit: advice bonus: expected 0 or more");
  std::vector<double> advice(agents_.size(), 0.0);
  for (const std::string& agent : agents) advice[index_of(agent)] = bonus;
  advice_ = std::move(advice);
}

void BudgetBandit::record(const std::string& agent, bool improved, double gain) {
  const std::size_t index = index_of(agent);
  for (std::size_t other = 0; other < agents_.size(); ++other) {
    weights_[other] *= options_.discount;
    gains_[other] *= options_.discount;
  }
  weights_[index] += 1;
  if (improved && gain > 0) {
    gains_[index] += gain;
    largest_gain_ = std::max(largest_gain_, gain);
  }
}

}  // namespace kernelarc

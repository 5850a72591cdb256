#include <gtest/gtest.h>

#include "search/termination.h"

namespace kernelarc {
namespace {

// Records results in order: a fitness (with its noise) or nullopt for a failure.
class Results {
 public:
  void add(std::optional<double> fitness, double noise = 0) {
    const int id =
        tree_.add({.template_name = "t", .point = {{"i", static_cast<int64_t>(tree_.size())}}});
    tree_.record(id, {.passed = fitness.has_value(), .fitness = fitness, .noise = noise});
  }
  const SearchTree& tree() const { return tree_; }

 private:
  SearchTree tree_;
};

TEST(SearchTermination, BudgetStopsAtTheLimit) {
  const TerminationRules rules{.max_evaluated = 3};
  Results results;
  results.add(1);
  results.add(std::nullopt);
  EXPECT_EQ(termination_reason(results.tree(), rules), std::nullopt);
  results.add(2);
  EXPECT_EQ(termination_reason(results.tree(), rules),
            "budget: 3 candidates evaluated (at most 3)");
}

TEST(SearchTermination, TargetStopsWhenReached) {
  const TerminationRules rules{.target_fitness = 0.9};
  Results results;
  results.add(0.5);
  results.add(0.89);
  EXPECT_EQ(termination_reason(results.tree(), rules), std::nullopt);
  results.add(0.9);
  EXPECT_EQ(termination_reason(results.tree(), rules),
            "target: best fitness 0.9 (node 2) reached the target 0.9");
}

TEST(SearchTermination, PlateauIgnoresGainsWithinTheNoise) {
  const TerminationRules rules{.plateau_results = 3};
  Results results;
  results.add(1.0, 0.05);
  results.add(1.04, 0.02);  // within the best's 5 %
  results.add(std::nullopt);
  EXPECT_EQ(termination_reason(results.tree(), rules), std::nullopt);
  results.add(1.051, 0.01);  // beyond 5 %: the new best, the count restarts
  results.add(0.7);
  results.add(1.06, 0.01);  // within 1 % of 1.051 (even though above it)
  EXPECT_EQ(termination_reason(results.tree(), rules), std::nullopt);
  results.add(1.0);
  EXPECT_EQ(termination_reason(results.tree(), rules),
            "plateau: 3 results without improving on fitness 1.051 (node 3) beyond its noise");
}

TEST(SearchTermination, PlateauOfFailures) {
  const TerminationRules rules{.plateau_results = 2};
  Results results;
  results.add(std::nullopt);
  EXPECT_EQ(termination_reason(results.tree(), rules), std::nullopt);
  results.add(std::nullopt);
  EXPECT_EQ(termination_reason(results.tree(), rules), "plateau: 2 results and none passed");
}

TEST(SearchTermination, NoRulesNeverStop) {
  Results results;
  for (int i = 0; i < 10; ++i) results.add(1);
  EXPECT_EQ(termination_reason(results.tree(), {}), std::nullopt);
}

}  // namespace
}  // namespace kernelarc

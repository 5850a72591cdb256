#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/error.h"
#include "llm/ensemble.h"

namespace kernelarc {
namespace {

LlmConfig ensemble(const std::vector<std::pair<std::string, double>>& weights) {
  LlmConfig config;
  for (const auto& [name, weight] : weights) {
    ModelConfig model;
    model.name = name;
    model.weight = weight;
    config.models.push_back(model);
  }
  return config;
}

TEST(Ensemble, TheSameSeedChoosesTheSameModel) {
  const LlmConfig config = ensemble({{"a", 1}, {"b", 1}, {"c", 1}});
  std::set<std::string> chosen;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const ModelConfig& model = choose_model(config, seed);
    EXPECT_EQ(&model, &choose_model(config, seed));
    chosen.insert(model.name);
  }
  EXPECT_EQ(chosen.size(), 3u);  // and different seeds reach every model
}

TEST(Ensemble, FollowsTheWeightsAndNeverChoosesAZeroWeight) {
  const LlmConfig config = ensemble({{"never", 0}, {"rare", 1}, {"often", 3}, {"off", 0}});
  std::map<std::string, int> counts;
  constexpr int kDraws = 4000;
  for (uint64_t seed = 0; seed < kDraws; ++seed) ++counts[choose_model(config, seed).name];
  EXPECT_EQ(counts.count("never"), 0u);
  EXPECT_EQ(counts.count("off"), 0u);
  // Expected 1000 and 3000; the bounds are many standard deviations (about 27) wide.
  EXPECT_GT(counts["rare"], 800);
  EXPECT_LT(counts["rare"], 1200);
  EXPECT_EQ(counts["rare"] + counts["often"], kDraws);
}

TEST(Ensemble, ASingleModelIsAlwaysChosen) {
  const LlmConfig config = ensemble({{"only", 0.5}});
  for (uint64_t seed = 0; seed < 20; ++seed) EXPECT_EQ(choose_model(config, seed).name, "only");
}

TEST(Ensemble, NoPositiveWeightIsAnError) {
  EXPECT_THROW(choose_model(ensemble({{"a", 0}}), 1), InputError);
  EXPECT_THROW(choose_model(LlmConfig{}, 1), InputError);
}

}  // namespace
}  // namespace kernelarc

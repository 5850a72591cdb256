#include <gtest/gtest.h>

#include "core/test_support.h"
#include "optimize/skill_distill.h"

namespace kernelarc {
namespace {

using testing::TempDir;

Conclusion conclusion(std::string knob, int64_t from, int64_t to, Speedup speedup, int64_t before,
                      int64_t after) {
  return {"rowreduce_cpu", {{std::move(knob), from, to}}, speedup, before, after};
}

const SkillCondition kCondition{"rmsnorm", "rmsnorm_f32: all 6 workloads", "cpu", "rmsnorm_f32"};

TEST(SkillDistill, EveryConclusionAndTheWinnerRouteBecomeObservations) {
  OptimizeSummary summary;
  summary.run_id = 4;
  summary.conclusions = {conclusion("VEC", 4, 8, {1.3, 1.2, 1.4}, 2, 5)};
  summary.winner_route =
      Conclusion{"rowreduce_cpu",
                 {{"VEC", int64_t{4}, int64_t{8}}, {"THREADS", int64_t{0}, int64_t{2}}},
                 {1.8, 1.6, 2.0},
                 2,
                 9};
  const auto observations = skill_observations(summary, kCondition);
  ASSERT_EQ(observations.size(), 2u);
  EXPECT_EQ(observations[0].family, "rmsnorm");
  EXPECT_EQ(observations[0].device, "cpu");
  EXPECT_EQ(observations[0].run_id, 4);
  EXPECT_EQ(observations[0].changes[0].to, nlohmann::json(8));
  EXPECT_DOUBLE_EQ(observations[0].effect.low, 1.2);
  EXPECT_EQ(observations[1].changes.size(), 2u);
  EXPECT_EQ(observations[1].after_candidate, 9);
}

TEST(SkillDistill, HintsComeFromActiveSkillsOfTheTemplatesStrongestFirst) {
  TempDir dir;
  SkillStore store(dir.path() / "knowledge.sqlite");
  OptimizeSummary summary;
  summary.run_id = 1;
  summary.conclusions = {conclusion("VEC", 4, 8, {1.3, 1.2, 1.4}, 2, 5),
                         conclusion("THREADS", 0, 2, {2.0, 1.8, 2.2}, 5, 7)};
  for (const auto& observation : skill_observations(summary, kCondition)) store.record(observation);
  SkillCondition other_device = kCondition;
  other_device.device = "NVIDIA H200";
  store.record(skill_observations(summary, other_device).front());

  const auto hints = skill_hints(store, kCondition, {"rowreduce_cpu"});
  ASSERT_EQ(hints.size(), 2u);
  EXPECT_EQ(hints[0].changes[0].knob, "THREADS");  // the larger effect ranks first
  EXPECT_EQ(hints[0].changes[0].to, KnobValue(int64_t{2}));
  EXPECT_GT(hints[0].weight, hints[1].weight);
  EXPECT_TRUE(skill_hints(store, kCondition, {"another_template"}).empty());
  EXPECT_EQ(skill_hints(store, kCondition, {"rowreduce_cpu"}, 1).size(), 1u);
}

}  // namespace
}  // namespace kernelarc

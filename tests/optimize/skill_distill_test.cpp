#include <gtest/gtest.h>

#include "core/test_support.h"
#include "optimize/shape_class.h"
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

SkillCondition condition_at(const std::string& shape_class) {
  SkillCondition condition = kCondition;
  condition.shape_class = shape_class;
  return condition;
}

TEST(SkillDistill, HintsFromCloserShapesComeFirst) {
  TempDir dir;
  SkillStore store(dir.path() / "knowledge.sqlite");
  const std::string at_4096 = "rmsnorm_f32: batch_size=1..16384 hidden_size=4096";
  const std::string at_8192 = "rmsnorm_f32: batch_size=1..16384 hidden_size=8192";
  // Equal effects give equal ranks; only the shapes tell the two skills apart.
  OptimizeSummary summary;
  summary.run_id = 1;
  summary.conclusions = {conclusion("VEC", 4, 8, {1.3, 1.2, 1.4}, 2, 5)};
  store.record(skill_observations(summary, condition_at(at_4096)).front());
  summary.conclusions = {conclusion("THREADS", 0, 2, {1.3, 1.2, 1.4}, 2, 5)};
  store.record(skill_observations(summary, condition_at(at_8192)).front());

  const auto near_4096 = skill_hints(store, condition_at(at_4096), {"rowreduce_cpu"});
  ASSERT_EQ(near_4096.size(), 2u);
  EXPECT_EQ(near_4096[0].changes[0].knob, "VEC");
  EXPECT_GT(near_4096[0].weight, near_4096[1].weight);
  const auto near_8192 = skill_hints(store, condition_at(at_8192), {"rowreduce_cpu"});
  ASSERT_EQ(near_8192.size(), 2u);
  EXPECT_EQ(near_8192[0].changes[0].knob, "THREADS");
  EXPECT_DOUBLE_EQ(near_8192[0].weight, near_4096[0].weight);
}

TEST(SkillDistill, SkillsOfUnreadableShapesStayBetweenNearAndFarOnes) {
  TempDir dir;
  SkillStore store(dir.path() / "knowledge.sqlite");
  OptimizeSummary summary;
  summary.run_id = 1;
  const std::pair<const char*, const char*> skills[] = {
      {"THREADS", "rmsnorm_f32: batch_size=1..16384 hidden_size=65536"},
      {"VEC", "rmsnorm_f32: all 6 workloads"},
      {"UNROLL", "rmsnorm_f32: batch_size=1..16384 hidden_size=4096"}};
  for (const auto& [knob, shape] : skills) {
    summary.conclusions = {conclusion(knob, 1, 2, {1.3, 1.2, 1.4}, 2, 5)};
    store.record(skill_observations(summary, condition_at(shape)).front());
  }
  const auto hints = skill_hints(
      store, condition_at("rmsnorm_f32: batch_size=1..16384 hidden_size=4096"), {"rowreduce_cpu"});
  ASSERT_EQ(hints.size(), 3u);
  EXPECT_EQ(hints[0].changes[0].knob, "UNROLL");
  EXPECT_EQ(hints[1].changes[0].knob, "VEC");
  EXPECT_EQ(hints[2].changes[0].knob, "THREADS");
  EXPECT_DOUBLE_EQ(hints[1].weight, hints[0].weight * kUnknownShapeSimilarity);
}

}  // namespace
}  // namespace kernelarc

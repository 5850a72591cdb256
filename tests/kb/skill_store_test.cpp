#include "kb/skill_store.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace kernelarc {
namespace {

class RecordingMirror : public SkillMirror {
 public:
  void put(const KbDocument& document) override {
    puts.push_back(document.source);
    last_put = document;
  }
  void remove(const std::string& source) override { removes.push_back(source); }

  std::vector<std::string> puts;
  std::vector<std::string> removes;
  KbDocument last_put;
};

SkillObservation block_observation(double value, double low, double high, int64_t run_id = 1) {
  SkillObservation observation;
  observation.family = "rmsnorm";
  observation.shape_class = "rows>=4096 hidden=4096";
  observation.device = "NVIDIA H200";
  observation.template_name = "rownorm";
  observation.changes = {{"BLOCK", 128, 256}, {"LAYOUT", "row", "col"}};
  observation.effect = {value, low, high};
  observation.run_id = run_id;
  observation.before_candidate = 10 * run_id;
  observation.after_candidate = 10 * run_id + 1;
  observation.problem = "rmsnorm_h4096";
  return observation;
}

class SkillStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("skill_store_test_" +
                  std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(directory_);
    std::filesystem::create_directories(directory_);
    file_ = directory_ / "knowledge.sqlite";
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::filesystem::path directory_;
  std::filesystem::path file_;
  RecordingMirror mirror_;
};

TEST_F(SkillStoreTest, CreatesASkillFromAnObservation) {
  SkillStore store(file_, &mirror_);
  const Skill skill = store.record(block_observation(1.3, 1.2, 1.4));

  EXPECT_EQ(skill.family, "rmsnorm");
  EXPECT_EQ(skill.shape_class, "rows>=4096 hidden=4096");
  EXPECT_EQ(skill.device, "NVIDIA H200");
  EXPECT_EQ(skill.template_name, "rownorm");
  EXPECT_EQ(skill.action_text(), "BLOCK 128->256, LAYOUT row->col");
  ASSERT_EQ(skill.evidence.size(), 1u);
  EXPECT_EQ(skill.evidence[0].run_id, 1);
  EXPECT_EQ(skill.evidence[0].before_candidate, 10);
  EXPECT_EQ(skill.evidence[0].after_candidate, 11);
  EXPECT_EQ(skill.evidence[0].problem, "rmsnorm_h4096");
  EXPECT_DOUBLE_EQ(skill.effect.value, 1.3);
  EXPECT_EQ(skill.confirmations, 1);
  EXPECT_EQ(skill.contradictions, 0);
  EXPECT_DOUBLE_EQ(skill.confidence, 2.0 / 3.0);
  EXPECT_FALSE(skill.retired);
  EXPECT_EQ(store.all().size(), 1u);
  ASSERT_TRUE(store.get(skill.id));
  EXPECT_EQ(store.get(skill.id)->action_text(), skill.action_text());
  EXPECT_FALSE(store.get(skill.id + 1));
}

TEST_F(SkillStoreTest, TheSameChangeObservedAgainMergesAndPoolsTheEffect) {
  SkillStore store(file_, &mirror_);
  const Skill first = store.record(block_observation(1.2, 1.1, 1.3, 1));
  const Skill merged = store.record(block_observation(1.8, 1.5, 2.0, 2));

  EXPECT_EQ(merged.id, first.id);
  EXPECT_EQ(store.all().size(), 1u);
  EXPECT_EQ(merged.evidence.size(), 2u);
  EXPECT_EQ(merged.confirmations, 2);
  EXPECT_DOUBLE_EQ(merged.confidence, 3.0 / 4.0);
  EXPECT_NEAR(merged.effect.value, std::sqrt(1.2 * 1.8), 1e-12);
  EXPECT_NEAR(merged.effect.low, std::sqrt(1.1 * 1.5), 1e-12);
  EXPECT_NEAR(merged.effect.high, std::sqrt(1.3 * 2.0), 1e-12);
}

TEST_F(SkillStoreTest, TheSameEvidenceRecordedTwiceCountsOnce) {
  SkillStore store(file_, &mirror_);
  store.record(block_observation(1.3, 1.2, 1.4, 1));
  const Skill again = store.record(block_observation(1.3, 1.2, 1.4, 1));
  EXPECT_EQ(again.evidence.size(), 1u);
  EXPECT_EQ(again.confirmations, 1);
}

TEST_F(SkillStoreTest, AnInconclusiveObservationCountsNeitherWay) {
  SkillStore store(file_, &mirror_);
  const Skill skill = store.record(block_observation(1.05, 0.95, 1.15));
  EXPECT_EQ(skill.confirmations, 0);
  EXPECT_EQ(skill.contradictions, 0);
  EXPECT_DOUBLE_EQ(skill.confidence, 0.5);
}

TEST_F(SkillStoreTest, KnobChangeOrderDoesNotMatter) {
  SkillStore store(file_, &mirror_);
  SkillObservation reordered = block_observation(1.4, 1.3, 1.5, 2);
  std::swap(reordered.changes[0], reordered.changes[1]);
  const Skill first = store.record(block_observation(1.3, 1.2, 1.4, 1));
  const Skill second = store.record(reordered);
  EXPECT_EQ(second.id, first.id);
  EXPECT_EQ(second.confirmations, 2);
  EXPECT_EQ(second.action_text(), "BLOCK 128->256, LAYOUT row->col");
}

TEST_F(SkillStoreTest, DifferentConditionsOrActionsAreDifferentSkills) {
  SkillStore store(file_, &mirror_);
  const int64_t base = store.record(block_observation(1.3, 1.2, 1.4)).id;

  std::vector<SkillObservation> variants(7, block_observation(1.3, 1.2, 1.4));
  variants[0].device = "cpu";
  variants[1].family = "layernorm";
  variants[2].template_name = "rownorm_warp";
  variants[3].shape_class = "rows<4096";
  variants[4].changes[0].to = 512;
  variants[5].changes.pop_back();
  variants[6].changes[0].from = "128";  // a label is not the integer 128
  std::vector<int64_t> ids = {base};
  for (const SkillObservation& variant : variants) {
    const int64_t id = store.record(variant).id;
    EXPECT_EQ(std::count(ids.begin(), ids.end(), id), 0) << "variant " << ids.size() - 1;
    ids.push_back(id);
  }
  EXPECT_EQ(store.all().size(), 8u);
}

TEST_F(SkillStoreTest, AContradictionWeakensAndThreeRetire) {
  SkillStore store(file_, &mirror_);
  const Skill confirmed = store.record(block_observation(1.3, 1.2, 1.4, 1));
  const SkillQuery query{"rmsnorm", "NVIDIA H200", std::nullopt, std::nullopt};

  const Skill weakened = store.record(block_observation(0.8, 0.7, 0.9, 2));
  EXPECT_EQ(weakened.contradictions, 1);
  EXPECT_LT(weakened.confidence, confirmed.confidence);
  EXPECT_DOUBLE_EQ(weakened.confidence, 2.0 / 4.0);

  const Skill twice = store.record(block_observation(0.8, 0.7, 0.9, 3));
  EXPECT_FALSE(twice.retired);
  ASSERT_EQ(store.find(query).size(), 1u);

  const Skill retired = store.record(block_observation(0.8, 0.7, 0.9, 4));
  EXPECT_EQ(retired.contradictions, 3);
  EXPECT_DOUBLE_EQ(retired.confidence, 2.0 / 6.0);
  EXPECT_TRUE(retired.retired);
  EXPECT_TRUE(store.find(query).empty());
  ASSERT_EQ(store.all().size(), 1u);
  EXPECT_TRUE(store.all()[0].retired);
}

TEST_F(SkillStoreTest, TheMirrorFollowsEveryChange) {
  SkillStore store(file_, &mirror_);
  const int64_t id = store.record(block_observation(1.3, 1.2, 1.4, 1)).id;
  const std::string source = "skill:" + std::to_string(id);
  EXPECT_EQ(mirror_.puts, std::vector<std::string>{source});
  EXPECT_NE(mirror_.last_put.title.find("BLOCK from 128 to 256"), std::string::npos);
  EXPECT_NE(mirror_.last_put.markdown.find("run 1 (rmsnorm_h4096): candidate 10 -> 11"),
            std::string::npos);
  EXPECT_EQ(mirror_.last_put.keys.families, std::vector<std::string>{"rmsnorm"});
  EXPECT_EQ(mirror_.last_put.keys.hardware, (std::vector<std::string>{"nvidia", "h200"}));

  for (int64_t run = 2; run <= 4; ++run) store.record(block_observation(0.8, 0.7, 0.9, run));
  EXPECT_EQ(mirror_.puts.size(), 3u);  // the first and the two contradictions before retiring
  EXPECT_EQ(mirror_.removes, std::vector<std::string>{source});

  SkillObservation other = block_observation(1.3, 1.2, 1.4, 5);
  other.changes = {{"VEC", 4, 8}};
  const int64_t other_id = store.record(other).id;

  RecordingMirror fresh;
  SkillStore(file_, &fresh).mirror_all();
  EXPECT_EQ(fresh.puts, std::vector<std::string>{"skill:" + std::to_string(other_id)});
  EXPECT_EQ(fresh.removes, std::vector<std::string>{source});
}

TEST_F(SkillStoreTest, MirrorsIntoTheKnowledgeBaseInTheSameFile) {
  KnowledgeBase knowledge_base(file_);
  KnowledgeBaseMirror mirror(knowledge_base);
  SkillStore store(file_, &mirror);
  const int64_t id = store.record(block_observation(1.3, 1.2, 1.4, 1)).id;
  const std::string source = "skill:" + std::to_string(id);

  auto has_source = [&] {
    for (const auto& [document, title] : knowledge_base.documents())
      if (document == source) return true;
    return false;
  };
  EXPECT_TRUE(has_source());
  KbQuery query;
  query.text = "BLOCK rownorm";
  query.keys.families = {"rmsnorm"};
  query.keys.hardware = {"h200"};
  const auto hits = knowledge_base.search(query);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits.front().source, source);

  for (int64_t run = 2; run <= 4; ++run) store.record(block_observation(0.8, 0.7, 0.9, run));
  EXPECT_FALSE(has_source());
}

TEST_F(SkillStoreTest, FindFiltersByConditionAndRanksByConfidenceTimesLogEffect) {
  SkillStore store(file_, &mirror_);
  SkillObservation small = block_observation(1.1, 1.05, 1.15);
  small.changes = {{"VEC", 4, 8}};
  SkillObservation large = block_observation(2.0, 1.8, 2.2);
  large.changes = {{"UNROLL", 1, 4}};
  SkillObservation other_device = large;
  other_device.device = "cpu";
  SkillObservation other_template = large;
  other_template.template_name = "rownorm_warp";
  for (const auto& observation : {small, large, other_device, other_template})
    store.record(observation);

  const auto found = store.find({"rmsnorm", "NVIDIA H200", std::nullopt, std::nullopt});
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].action_text(), "UNROLL 1->4");
  EXPECT_EQ(found.back().action_text(), "VEC 4->8");

  const auto in_template = store.find({"rmsnorm", "NVIDIA H200", "rownorm", std::nullopt});
  EXPECT_EQ(in_template.size(), 2u);
  EXPECT_EQ(store.find({"rmsnorm", "NVIDIA H200", std::nullopt, "rows<4096"}).size(), 0u);
  EXPECT_EQ(store.find({"softmax", "NVIDIA H200", std::nullopt, std::nullopt}).size(), 0u);
}

TEST_F(SkillStoreTest, SurvivesReopeningTheFile) {
  int64_t id = 0;
  {
    SkillStore store(file_, &mirror_);
    store.record(block_observation(1.2, 1.1, 1.3, 1));
    id = store.record(block_observation(1.8, 1.5, 2.0, 2)).id;
  }
  SkillStore reopened(file_);
  const auto skill = reopened.get(id);
  ASSERT_TRUE(skill);
  EXPECT_EQ(skill->evidence.size(), 2u);
  EXPECT_EQ(skill->confirmations, 2);
  EXPECT_EQ(skill->changes.size(), 2u);
  EXPECT_EQ(skill->changes[0].from, 128);
  EXPECT_EQ(skill->changes[1].to, "col");
  EXPECT_EQ(reopened.record(block_observation(1.5, 1.4, 1.6, 3)).id, id);
}

TEST_F(SkillStoreTest, RejectsMalformedObservations) {
  SkillStore store(file_, &mirror_);
  auto expect_rejected = [&](SkillObservation observation, const std::string& field) {
    try {
      store.record(observation);
      ADD_FAILURE() << "accepted an observation with a bad " << field;
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(field), std::string::npos) << error.what();
    }
  };
  SkillObservation no_changes = block_observation(1.3, 1.2, 1.4);
  no_changes.changes.clear();
  expect_rejected(no_changes, "changes");
  SkillObservation repeated = block_observation(1.3, 1.2, 1.4);
  repeated.changes.push_back({"BLOCK", 64, 32});
  expect_rejected(repeated, "changes.BLOCK");
  SkillObservation no_op = block_observation(1.3, 1.2, 1.4);
  no_op.changes[0].to = 128;
  expect_rejected(no_op, "changes.BLOCK");
  SkillObservation fractional = block_observation(1.3, 1.2, 1.4);
  fractional.changes[0].to = 0.5;
  expect_rejected(fractional, "changes.BLOCK");
  SkillObservation no_device = block_observation(1.3, 1.2, 1.4);
  no_device.device.clear();
  expect_rejected(no_device, "device");
  expect_rejected(block_observation(1.3, 1.4, 1.2), "effect");
  expect_rejected(block_observation(1.3, 0, 1.4), "effect");
  EXPECT_TRUE(store.all().empty());
  EXPECT_TRUE(mirror_.puts.empty());
}

}  // namespace
}  // namespace kernelarc

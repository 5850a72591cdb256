// Fitness, speedup intervals and the stored form of a measurement; agent lists and strategies.
#include <gtest/gtest.h>

#include "core/error.h"
#include "optimize/measurement.h"
#include "optimize/strategy.h"

namespace kernelarc {
namespace {

Trace passed(const std::string& uuid, std::vector<double> samples) {
  Trace trace;
  trace.workload = OrderedJson{{"uuid", uuid}};
  trace.samples_ms = samples;
  trace.latency_ms = summarize(std::move(samples));
  return trace;
}

TEST(Measurement, PassesOnlyWhenEveryTraceDoesAndKeepsTheFirstFailure) {
  Trace failed;
  failed.workload = OrderedJson{{"uuid", "b"}};
  failed.status = EvalStatus::IncorrectNumerical;
  failed.log = "max abs error 3";
  const Measurement ok = measurement_of({passed("a", {1, 1, 1})});
  EXPECT_TRUE(ok.passed);
  const Measurement bad = measurement_of({passed("a", {1, 1, 1}), failed});
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.status, EvalStatus::IncorrectNumerical);
  EXPECT_EQ(bad.log, "max abs error 3");
  EXPECT_TRUE(bad.times.empty());
  EXPECT_FALSE(measurement_of({}).passed);
}

TEST(Measurement, TakesTheLowestOccupancyAndSurvivesTheStoredForm) {
  Trace trace = passed("a", {2, 2.2, 1.8});
  trace.sol_ms = 1.0;
  trace.extra = OrderedJson::object();
  trace.extra["kernels"] = {{{"theoretical_occupancy", {{"fraction", 0.75}}}},
                            {{"theoretical_occupancy", {{"fraction", 0.5}}}}};
  const Measurement measurement = measurement_of({trace});
  ASSERT_TRUE(measurement.occupancy);
  EXPECT_DOUBLE_EQ(*measurement.occupancy, 0.5);
  const Measurement back = measurement_from_json(measurement_to_json(measurement), "test");
  EXPECT_EQ(back.passed, measurement.passed);
  EXPECT_DOUBLE_EQ(*back.occupancy, 0.5);
  EXPECT_DOUBLE_EQ(back.times.at("a").median_ms, 2);
  EXPECT_DOUBLE_EQ(*back.times.at("a").sol_ms, 1);
  EXPECT_FALSE(back.times.at("a").eager_ms);
  EXPECT_THROW(measurement_from_json({{"passed", true}}, "test"), InputError);
}

TEST(Measurement, KeepsTheDiagnosisSuggestionsThroughTheStoredForm) {
  const KnobSuggestion raise_vec{"VEC", KnobDirection::Raise, std::nullopt, "loads are 4 bytes"};
  Trace trace = passed("a", {2, 2, 2});
  trace.extra = OrderedJson::object();
  trace.extra["diagnosis"] = {{"bottleneck", "memory"},
                              {"suggestions", suggestions_to_json({raise_vec})}};
  const Measurement measurement = measurement_of({trace, passed("b", {1, 1, 1})});
  EXPECT_EQ(suggestions_at(measurement, "a"), std::vector<KnobSuggestion>{raise_vec});
  EXPECT_TRUE(suggestions_at(measurement, "b").empty());
  EXPECT_TRUE(suggestions_at(measurement, "c").empty());
  nlohmann::json json = measurement_to_json(measurement);
  EXPECT_EQ(suggestions_at(measurement_from_json(json, "test"), "a"),
            std::vector<KnobSuggestion>{raise_vec});
  // A measurement stored before there were suggestions.
  json["times"]["a"].erase("suggestions");
  EXPECT_TRUE(suggestions_at(measurement_from_json(json, "test"), "a").empty());
  json["times"]["a"]["suggestions"] = {{{"knob", "VEC"}, {"direction", "up"}}};
  EXPECT_THROW(measurement_from_json(json, "test"), InputError);
}

TEST(Measurement, FitnessIsTheGeometricMeanSpeedupOverTheReference) {
  const Measurement measurement = measurement_of({passed("a", {1, 1, 1}), passed("b", {4, 4, 4})});
  const Fitness fitness = fitness_of(measurement, {{"a", 2}, {"b", 2}});
  EXPECT_DOUBLE_EQ(fitness.value, 1);  // sqrt(2 * 0.5)
  EXPECT_DOUBLE_EQ(fitness.noise, 0);
  EXPECT_THROW(fitness_of(measurement, {{"a", 2}}), InputError);
}

TEST(Measurement, SpeedupIsSignificantOnlyBeyondBothIntervals) {
  const Measurement slow = measurement_of({passed("a", {9.5, 10, 10.5})});
  const Measurement fast = measurement_of({passed("a", {4.5, 5, 5.5})});
  const Measurement close = measurement_of({passed("a", {9, 9.8, 10.2})});
  const Speedup clear = speedup_of(slow, fast);
  EXPECT_DOUBLE_EQ(clear.value, 2);
  EXPECT_DOUBLE_EQ(clear.low, 9.5 / 5.5);
  EXPECT_DOUBLE_EQ(clear.high, 10.5 / 4.5);
  EXPECT_TRUE(clear.significant());
  EXPECT_FALSE(speedup_of(slow, close).significant());
}

TEST(Strategy, AgentListsAreACountOrNames) {
  EXPECT_EQ(parse_agent_list("1"), std::vector<std::string>{"explore"});
  EXPECT_EQ(parse_agent_list("4"),
            (std::vector<std::string>{"explore", "memory", "parallelism", "compute"}));
  EXPECT_EQ(parse_agent_list("6").size(), 6u);
  EXPECT_EQ(parse_agent_list("fusion,memory"), (std::vector<std::string>{"fusion", "memory"}));
  EXPECT_THROW(parse_agent_list("0"), InputError);
  EXPECT_THROW(parse_agent_list("7"), InputError);
  EXPECT_THROW(parse_agent_list("memory,memory"), InputError);
  EXPECT_THROW(parse_agent_list("memory,"), InputError);
}

TEST(Strategy, ChangesOnlyKnobsOfItsRoles) {
  Knob vec = Knob::int_set("VEC", {1, 2, 4});
  vec.with_roles({"memory"});
  Knob threads = Knob::pow2("THREADS", 32, 1024);
  threads.with_roles({"parallelism"});
  const Knob bare = Knob::boolean("FLAG");
  const Strategy& memory = find_strategy("memory");
  EXPECT_TRUE(strategy_changes(memory, vec));
  EXPECT_FALSE(strategy_changes(memory, threads));
  EXPECT_FALSE(strategy_changes(memory, bare));
  EXPECT_TRUE(strategy_changes(find_strategy("explore"), bare));
  EXPECT_FALSE(strategy_knob_filter(find_strategy("explore")));
  EXPECT_THROW(find_strategy("speed"), InputError);
}

}  // namespace
}  // namespace kernelarc

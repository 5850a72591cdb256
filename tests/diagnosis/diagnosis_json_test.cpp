#include <gtest/gtest.h>

#include "core/error.h"
#include "diagnosis/diagnosis.h"
#include "diagnosis_test_support.h"

namespace kernelarc {
namespace {

TEST(DiagnosisJson, RoundTrip) {
  const Definition def = load_definition(testing::kProblems / "cuda/rmsnorm_bf16/definition.json");
  OrderedJson kernel = testing::kernel_record("rmsnorm", 64, 256, 128, 0.25, "registers");
  kernel["local_bytes_per_thread"] = 16;
  kernel["busy_us"] = 30.0;
  OrderedJson add = testing::kernel_record("add", 8, 128, 16, 1.0);
  add["busy_us"] = 10.0;
  const Diagnosis original = diagnose(def, {{"batch_size", 2048}, {"hidden_size", 4096}},
                                      testing::gpu_trace(0.05, {kernel, add}),
                                      testing::gpu_calibration(), KnobPoint{{"VEC", int64_t{2}}});
  ASSERT_FALSE(original.hints.empty());
  ASSERT_TRUE(original.lowest_occupancy);
  ASSERT_TRUE(original.lowest_occupancy->time_share);

  const OrderedJson json = original.to_json();
  EXPECT_EQ(json["bottleneck"], "latency");
  const Diagnosis read = Diagnosis::from_json(OrderedJson::parse(json.dump()));
  EXPECT_EQ(read.to_json(), json);
  EXPECT_EQ(read.bottleneck, original.bottleneck);
  EXPECT_EQ(read.hints, original.hints);
  EXPECT_EQ(read.lowest_occupancy, original.lowest_occupancy);
  EXPECT_EQ(read.launch_share, original.launch_share);
}

TEST(DiagnosisJson, AnOccupancyStoredWithoutItsTimeShareStillReads) {
  Diagnosis original;
  original.lowest_occupancy = OccupancyLimit{"k", 0.25, "registers", 128, 256, 0, std::nullopt};
  OrderedJson json = original.to_json();
  json["lowest_occupancy"].erase("time_share");
  const Diagnosis read = Diagnosis::from_json(json);
  EXPECT_EQ(read.lowest_occupancy, original.lowest_occupancy);
  json["lowest_occupancy"]["time_share"] = "most";
  try {
    Diagnosis::from_json(json);
    FAIL() << "a time share that is not a number was read";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("lowest_occupancy.time_share"), std::string::npos)
        << error.what();
  }
}

TEST(DiagnosisJson, AbsentValuesStayAbsent) {
  const Diagnosis empty;
  const Diagnosis read = Diagnosis::from_json(empty.to_json());
  EXPECT_FALSE(read.median_us);
  EXPECT_FALSE(read.lowest_occupancy);
  EXPECT_EQ(read.bottleneck, Bottleneck::Unknown);
}

TEST(DiagnosisJson, TraceTextIsTheAttachedDiagnosisOrNothing) {
  Trace trace;
  EXPECT_FALSE(trace_diagnosis_text(trace));
  Diagnosis diagnosis;
  diagnosis.bottleneck = Bottleneck::Memory;
  diagnosis.reason = "536.9 MB in 146.7 us";
  trace.extra["diagnosis"] = diagnosis.to_json();
  EXPECT_EQ(trace_diagnosis_text(trace), diagnosis_text(diagnosis));
  EXPECT_EQ(trace_diagnosis_text(trace), "memory-bound: 536.9 MB in 146.7 us");
}

TEST(DiagnosisJson, BottleneckNames) {
  for (const char* name : {"memory", "compute", "latency", "launch", "unknown"}) {
    const auto bottleneck = bottleneck_from_name(name);
    ASSERT_TRUE(bottleneck) << name;
    EXPECT_EQ(bottleneck_name(*bottleneck), name);
  }
  EXPECT_FALSE(bottleneck_from_name("Memory"));
}

TEST(DiagnosisJson, ErrorsNameTheField) {
  OrderedJson json = Diagnosis{}.to_json();
  json["bottleneck"] = "slow";
  try {
    Diagnosis::from_json(json, "trace.extra.diagnosis");
    FAIL() << "accepted an unknown bottleneck";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("trace.extra.diagnosis: bottleneck"),
              std::string::npos)
        << error.what();
  }
  json = Diagnosis{}.to_json();
  json.erase("hints");
  EXPECT_THROW(Diagnosis::from_json(json), InputError);
}

TEST(DiagnosisJson, SuggestionsRoundTripAndOldDiagnosesStillParse) {
  Diagnosis original;
  original.suggestions = {{"VEC", KnobDirection::Raise, std::nullopt, "loads are 4 bytes wide"},
                          {"THREADS", KnobDirection::Set, int64_t{0}, "THREADS=1 of 2 cores"},
                          {"ROW_MAPPING", KnobDirection::Set, std::string("warp"), "few blocks"},
                          {"STAGES", KnobDirection::Lower, std::nullopt, "shared memory"}};
  const OrderedJson json = original.to_json();
  EXPECT_EQ(json["suggestions"][1]["value"], 0);
  EXPECT_EQ(json["suggestions"][2]["value"], "warp");
  EXPECT_TRUE(json["suggestions"][0]["value"].is_null());
  const Diagnosis read = Diagnosis::from_json(OrderedJson::parse(json.dump()));
  EXPECT_EQ(read.suggestions, original.suggestions);
  EXPECT_EQ(read.to_json(), json);

  OrderedJson old = json;
  old.erase("suggestions");
  EXPECT_TRUE(Diagnosis::from_json(old).suggestions.empty());
}

TEST(DiagnosisJson, MalformedSuggestionsNameTheField) {
  const auto error_of = [](const OrderedJson& suggestion) {
    OrderedJson json = Diagnosis{}.to_json();
    json["suggestions"] = OrderedJson::array({suggestion});
    try {
      Diagnosis::from_json(json, "trace.extra.diagnosis");
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  const OrderedJson good = KnobSuggestion{"VEC", KnobDirection::Raise, std::nullopt, "r"}.to_json();
  EXPECT_EQ(error_of(good), "accepted");
  OrderedJson bad = good;
  bad["direction"] = "up";
  EXPECT_NE(error_of(bad).find("trace.extra.diagnosis: suggestions[0]: direction"),
            std::string::npos)
      << error_of(bad);
  bad = good;
  bad["direction"] = "set";  // a set without its value
  EXPECT_NE(error_of(bad).find("suggestions[0]: value"), std::string::npos) << error_of(bad);
  bad = good;
  bad["value"] = 4;  // a raise goes one step, so a value means nothing
  EXPECT_NE(error_of(bad).find("suggestions[0]: value"), std::string::npos) << error_of(bad);
  bad = good;
  bad["value"] = true;
  bad["direction"] = "set";
  EXPECT_NE(error_of(bad).find("suggestions[0]: value"), std::string::npos) << error_of(bad);
  bad = good;
  bad.erase("knob");
  EXPECT_NE(error_of(bad).find("suggestions[0]: knob"), std::string::npos) << error_of(bad);
  OrderedJson json = Diagnosis{}.to_json();
  json["suggestions"] = "raise VEC";
  EXPECT_THROW(Diagnosis::from_json(json), InputError);
}

}  // namespace
}  // namespace kernelarc

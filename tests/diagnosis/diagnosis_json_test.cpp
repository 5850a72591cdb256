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
  const Diagnosis original =
      diagnose(def, {{"batch_size", 2048}, {"hidden_size", 4096}},
               testing::gpu_trace(0.05, {kernel, testing::kernel_record("add", 8, 128, 16, 1.0)}),
               testing::gpu_calibration(), KnobPoint{{"VEC", int64_t{2}}});
  ASSERT_FALSE(original.hints.empty());
  ASSERT_TRUE(original.lowest_occupancy);

  const OrderedJson json = original.to_json();
  EXPECT_EQ(json["bottleneck"], "latency");
  const Diagnosis read = Diagnosis::from_json(OrderedJson::parse(json.dump()));
  EXPECT_EQ(read.to_json(), json);
  EXPECT_EQ(read.bottleneck, original.bottleneck);
  EXPECT_EQ(read.hints, original.hints);
  EXPECT_EQ(read.lowest_occupancy, original.lowest_occupancy);
  EXPECT_EQ(read.launch_share, original.launch_share);
}

TEST(DiagnosisJson, AbsentValuesStayAbsent) {
  const Diagnosis empty;
  const Diagnosis read = Diagnosis::from_json(empty.to_json());
  EXPECT_FALSE(read.median_us);
  EXPECT_FALSE(read.lowest_occupancy);
  EXPECT_EQ(read.bottleneck, Bottleneck::Unknown);
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

}  // namespace
}  // namespace kernelarc

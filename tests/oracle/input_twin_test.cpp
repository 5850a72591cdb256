// The twin of a trial (oracle/input_twin.h) and the oracle entries made from it, with a Python
// and with a native reference: one element per floating tensor changed, the expected outputs
// computed from exactly those inputs.
#include <gtest/gtest.h>

#include "oracle/input_twin.h"
#include "oracle/oracle.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

HostTensor tensor_of(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  HostTensor tensor(dtype, std::move(shape));
  for (std::size_t i = 0; i < values.size(); ++i) tensor.set(static_cast<int64_t>(i), values[i]);
  return tensor;
}

std::vector<int64_t> changed_positions(const HostTensor& a, const HostTensor& b) {
  std::vector<int64_t> changed;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.at(i) != b.at(i)) changed.push_back(i);
  return changed;
}

TEST(InputTwin, MovesOneElementOfEachFloatingTensorHalfwayToTheFarthestOfItsRow) {
  TensorMap inputs;
  inputs["x"] = tensor_of(DType::Float32, {2, 4}, {1, 2, 4, 8, -8, 0, 5, 6});
  inputs["weight"] = tensor_of(DType::BFloat16, {4}, {1, 2, 4, 8});
  inputs["index"] = tensor_of(DType::Int32, {4}, {0, 1, 2, 3});
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const auto twin = make_twin(inputs, seed);
    ASSERT_TRUE(twin.has_value());
    EXPECT_EQ(twin->at("index").bytes, inputs.at("index").bytes);
    for (const char* name : {"x", "weight"}) {
      const HostTensor& before = inputs.at(name);
      const HostTensor& after = twin->at(name);
      const auto changed = changed_positions(before, after);
      ASSERT_EQ(changed.size(), 1u) << name << " seed " << seed;
      // The new value lies halfway to the one of its row farthest from the old value, and no
      // other element of the row holds it: no tie at the row's extreme (a topk's order).
      const int64_t row_length = before.shape.back();
      const int64_t first = changed[0] / row_length * row_length;
      double farthest = before.at(first);
      for (int64_t i = first; i < first + row_length; ++i) {
        if (std::abs(before.at(i) - before.at(changed[0])) >
            std::abs(farthest - before.at(changed[0]))) {
          farthest = before.at(i);
        }
      }
      EXPECT_EQ(after.at(changed[0]), (before.at(changed[0]) + farthest) / 2) << name;
      for (int64_t i = first; i < first + row_length; ++i)
        if (i != changed[0]) EXPECT_NE(after.at(i), after.at(changed[0])) << name;
    }
    EXPECT_EQ(make_twin(inputs, seed)->at("x").bytes, twin->at("x").bytes);
  }
}

TEST(InputTwin, AHalfwayValueTheRowHoldsGivesWayToAQuarter) {
  // 3 moved toward 1 would be 2, which the row holds (a tie): a quarter of the way, 2.5.
  TensorMap inputs;
  inputs["x"] = tensor_of(DType::Float32, {4}, {1, 2, 3, 4});
  int checked = 0;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    const auto twin = make_twin(inputs, seed);
    ASSERT_TRUE(twin.has_value());
    const auto changed = changed_positions(inputs.at("x"), twin->at("x"));
    ASSERT_EQ(changed.size(), 1u);
    if (changed[0] != 2) continue;
    EXPECT_EQ(twin->at("x").at(2), 2.5);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(InputTwin, NothingToChangeGivesNoTwin) {
  TensorMap inputs;
  inputs["ones"] = tensor_of(DType::Float32, {2, 3}, {1, 1, 1, 1, 1, 1});
  inputs["scalar"] = tensor_of(DType::Float32, {}, {2});
  inputs["index"] = tensor_of(DType::Int64, {3}, {0, 5, 9});
  EXPECT_FALSE(make_twin(inputs, 1).has_value());
}

TEST(InputTwin, CustomInputsHaveNoTwin) {
  Workload workload;
  workload.inputs["x"].kind = InputKind::Random;
  EXPECT_TRUE(twin_applies(workload));
  workload.inputs["lengths"].kind = InputKind::Custom;
  EXPECT_FALSE(twin_applies(workload));
}

/// The twin entry differs from trial 0 in one element of x, and its expected output is the
/// reference's output for the twin's inputs: out = x * weight * alpha.
void expect_twin_of_scale(Oracle& oracle, const Problem& problem) {
  EXPECT_FALSE(oracle.has_twin(problem, workload_named(problem, "bad")));  // reference fails
  for (const char* uuid : {"small", "large"}) {
    const Workload& workload = workload_named(problem, uuid);
    ASSERT_TRUE(oracle.has_twin(problem, workload)) << workload.uuid;
    const TensorMap base = oracle.inputs(problem, workload, 0)->copy();
    const TensorMap twin = oracle.inputs(problem, workload, kTwinTrial)->copy();
    EXPECT_EQ(changed_positions(base.at("x"), twin.at("x")).size(), 1u);
    EXPECT_EQ(twin.at("rms_norm_weight").bytes, base.at("rms_norm_weight").bytes);
    const HostTensor& x = twin.at("x");
    const HostTensor& out = oracle.expected(problem, workload, kTwinTrial)->at("out");
    const float alpha = static_cast<float>(twin.at("alpha").at(0));
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float want = static_cast<float>(x.at(i)) *
                         static_cast<float>(twin.at("rms_norm_weight").at(i % 4)) * alpha;
      EXPECT_FLOAT_EQ(static_cast<float>(out.at(i)), want) << workload.uuid << " element " << i;
    }
  }
}

TEST(OracleTwin, PythonReferenceComputesTheTwinsOutputs) {
  TempDir temp;
  OracleOptions options;
  options.cache_dir = temp / "oracle";
  Oracle oracle(options);
  const Problem problem = fixture_problem("py_scale");
  oracle.prepare(problem, 1);
  expect_twin_of_scale(oracle, problem);
}

TEST(OracleTwin, NativeReferenceComputesTheTwinsOutputs) {
  TempDir temp;
  ScopedEnv no_python{"KERNELARC_PYTHON", "/nonexistent/bin/python3"};
  OracleOptions options;
  options.cache_dir = temp / "oracle";
  options.worker_executable = KERNELARC_BINARY;
  Oracle oracle(options);
  const Problem problem = fixture_problem("native_scale");
  oracle.prepare(problem, 1);
  EXPECT_EQ(oracle.python_runs(), 0);
  expect_twin_of_scale(oracle, problem);
}

}  // namespace
}  // namespace kernelarc

// Shared parameter inputs (oracle/shared_parameters.h): above a size threshold, a workload's
// const-shaped random inputs (weights) are drawn once and shared by its trials, stored once on
// disk, while its activations stay fresh per trial.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/safetensors.h"
#include "oracle/oracle.h"
#include "oracle/shared_parameters.h"
#include "oracle_test_support.h"

namespace kernelarc {
namespace {

using namespace oracle_testing;

// w: [512, 512] float32 = 1 MiB, const axes only (a parameter); x: [rows, 512] (an activation).
constexpr const char* kLinearDefinition = R"({
  "name": "shared_linear",
  "op_type": "gemm",
  "axes": {
    "rows": {"type": "var"},
    "in_features": {"type": "const", "value": 512},
    "out_features": {"type": "const", "value": 512}
  },
  "inputs": {
    "x": {"shape": ["rows", "in_features"], "dtype": "float32"},
    "w": {"shape": ["out_features", "in_features"], "dtype": "float32"}
  },
  "outputs": {"out": {"shape": ["rows", "out_features"], "dtype": "float32"}},
  "reference": "def run(x, w):\n    return x @ w.T\n"
})";

Problem shared_linear_problem(const TempDir& temp, const std::string& workloads) {
  temp.write("problem/definition.json", kLinearDefinition);
  temp.write("problem/workload.jsonl", workloads);
  return load_problem(temp / "problem");
}

constexpr const char* kTwoWorkloads =
    R"({"uuid":"a","axes":{"rows":3},"inputs":{"x":{"type":"random"},"w":{"type":"random"}}}
{"uuid":"b","axes":{"rows":5},"inputs":{"x":{"type":"random"},"w":{"type":"random"}}}
)";

class SharedParametersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::torch_python().empty()) GTEST_SKIP() << "no Python with torch";
  }
  OracleOptions options(const std::string& cache, std::uint64_t threshold) const {
    OracleOptions result;
    result.cache_dir = temp_ / cache;
    result.python = testing::torch_python();
    result.shared_parameter_bytes = threshold;
    return result;
  }
  TempDir temp_;
};

TEST(SharedParameterInputs, ChoosesLargeRandomConstShapedInputsAboveTheThreshold) {
  TempDir temp;
  Problem problem = shared_linear_problem(temp, kTwoWorkloads);
  const Definition& definition = problem.definition;
  const Workload& workload = problem.workloads.front();
  EXPECT_EQ(shared_parameter_inputs(definition, workload, 1 << 20), std::vector<std::string>{"w"});
  EXPECT_TRUE(shared_parameter_inputs(definition, workload, 0).empty());         // disabled
  EXPECT_TRUE(shared_parameter_inputs(definition, workload, 64 << 20).empty());  // small draw

  Workload given = workload;  // a parameter the workload gives from a file is not drawn
  given.inputs["w"] =
      WorkloadInput{.kind = InputKind::Safetensors, .path = "w.safetensors", .tensor_key = "w"};
  EXPECT_TRUE(shared_parameter_inputs(definition, given, 1 << 20).empty());

  Definition all_constant = definition;  // no activation left fresh: nothing is shared
  ASSERT_EQ(all_constant.axes[0].name, "rows");
  all_constant.axes[0] = {.name = "rows", .kind = AxisKind::Const, .value = 3};
  Workload without_axes = workload;
  without_axes.axes.clear();
  ASSERT_NO_THROW(resolve_axes(all_constant, without_axes));
  EXPECT_TRUE(shared_parameter_inputs(all_constant, without_axes, 1 << 20).empty());

  Definition expression = definition;  // an expression over const axes is constant too
  expression.axes.push_back(
      {.name = "twice", .kind = AxisKind::Expr, .expression = "2 * in_features"});
  expression.inputs[1].shape = std::vector<std::string>{"twice", "in_features"};
  EXPECT_EQ(shared_parameter_inputs(expression, workload, 1 << 20), std::vector<std::string>{"w"});
  expression.axes.back().expression = "rows + out_features";  // but not one over a var axis
  EXPECT_TRUE(shared_parameter_inputs(expression, workload, 1 << 20).empty());

  Definition small = definition;  // under 1 MiB a parameter stays fresh
  small.inputs[1].dtype = DType::BFloat16;
  EXPECT_TRUE(shared_parameter_inputs(small, workload, 1 << 10).empty());
}

TEST_F(SharedParametersTest, TrialsShareTheWeightsAndDrawFreshActivations) {
  Problem problem = shared_linear_problem(temp_, kTwoWorkloads);
  constexpr int kTrials = 3;
  Oracle oracle(options("oracle", 1 << 20));
  oracle.prepare(problem, kTrials);
  for (const Workload& workload : problem.workloads) {
    ASSERT_FALSE(oracle.reference_error(problem, workload).has_value())
        << *oracle.reference_error(problem, workload);
    const int64_t rows = workload.axes.at("rows");
    const auto first = oracle.inputs(problem, workload, 0);
    for (int trial = 0; trial < kTrials; ++trial) {
      const auto inputs = oracle.inputs(problem, workload, trial);
      const auto expected = oracle.expected(problem, workload, trial);
      ASSERT_TRUE(inputs->contains("x") && inputs->contains("w")) << "trial " << trial;
      const HostTensor& x = inputs->at("x");
      const HostTensor& w = inputs->at("w");
      ASSERT_EQ(x.shape, (std::vector<int64_t>{rows, 512}));
      ASSERT_EQ(w.shape, (std::vector<int64_t>{512, 512}));
      EXPECT_EQ(w.bytes, first->at("w").bytes) << "trial " << trial;
      // Held once for every trial, not copied into each (the guard reads 14 draws a candidate).
      EXPECT_EQ(&w, &first->at("w")) << "trial " << trial;
      if (trial > 0) EXPECT_NE(x.bytes, first->at("x").bytes) << "trial " << trial;
      const HostTensor& out = expected->at("out");
      ASSERT_EQ(out.shape, (std::vector<int64_t>{rows, 512}));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t o = 0; o < 512; ++o) {
          double want = 0;
          for (int64_t i = 0; i < 512; ++i) want += x.at(r * 512 + i) * w.at(o * 512 + i);
          ASSERT_NEAR(out.at(r * 512 + o), want, 1e-3 * (1 + std::abs(want)))
              << "trial " << trial << " element " << r << "," << o;
        }
      }
    }
    ASSERT_TRUE(oracle.has_twin(problem, workload));
    const auto twin = oracle.inputs(problem, workload, kTwinTrial);
    EXPECT_TRUE(twin->contains("x") && twin->contains("w"));
  }
  // One draw of the weights serves both workloads (their shape has no var axis).
  EXPECT_EQ(oracle.inputs(problem, problem.workloads[0], 0)->at("w").bytes,
            oracle.inputs(problem, problem.workloads[1], 0)->at("w").bytes);

  // On disk: one parameters file for the problem, holding w alone; the trials' files hold x
  // alone, the twins' both (a twin changes an element of w too).
  const auto dir = temp_ / "oracle" / "shared_linear";
  const auto parameter_files = files_ending(dir, ".parameters.safetensors");
  ASSERT_EQ(parameter_files.size(), 1u);
  for (const auto& file : parameter_files) {
    const TensorMap stored = read_safetensors(file);
    EXPECT_EQ(stored.size(), 1u);
    EXPECT_TRUE(stored.contains("w"));
  }
  int trial_files = 0;
  int twin_files = 0;
  for (const auto& file : files_ending(dir, ".inputs.safetensors")) {
    const TensorMap stored = read_safetensors(file);
    EXPECT_TRUE(stored.contains("x")) << file;
    (stored.contains("w") ? twin_files : trial_files) += 1;
  }
  EXPECT_EQ(trial_files, 2 * kTrials);
  EXPECT_EQ(twin_files, 2);

  // Another interpreter drawing a later trial reads the parameters file instead of drawing.
  Oracle later(options("oracle", 1 << 20));
  later.prepare(problem, kTrials + 1);
  EXPECT_EQ(later.python_runs(), 1);
  const Workload& a = problem.workloads[0];
  EXPECT_EQ(later.inputs(problem, a, kTrials)->at("w").bytes,
            oracle.inputs(problem, a, 0)->at("w").bytes);

  // A corrupt parameters file is reported, deleted and drawn again, identically.
  const TensorBytes w_before = oracle.inputs(problem, a, 0)->at("w").bytes;
  for (const auto& file : parameter_files)
    std::ofstream(file, std::ios::binary | std::ios::trunc) << "garbage";
  Oracle reader(options("oracle", 1 << 20));
  const std::string message = input_error_of([&] { reader.inputs(problem, a, 1); });
  EXPECT_NE(message.find(".parameters.safetensors"), std::string::npos) << message;
  reader.prepare(problem, kTrials);
  EXPECT_EQ(reader.inputs(problem, a, 1)->at("w").bytes, w_before);
}

TEST_F(SharedParametersTest, ThresholdZeroDrawsTheWeightsPerTrial) {
  Problem problem = shared_linear_problem(temp_, kTwoWorkloads);
  Oracle oracle(options("unshared", 0));
  oracle.prepare(problem, 2);
  const Workload& workload = problem.workloads.front();
  EXPECT_NE(oracle.inputs(problem, workload, 0)->at("w").bytes,
            oracle.inputs(problem, workload, 1)->at("w").bytes);
  EXPECT_TRUE(
      files_ending(temp_ / "unshared" / "shared_linear", ".parameters.safetensors").empty());
}

// Inputs from the definition's make_inputs (custom_inputs_entrypoint, as the MoE problems draw
// their expert weights) are shared the same way: the parameters come from a draw under the
// workload's seed, the activations from each trial's.
TEST_F(SharedParametersTest, CustomInputsShareTheWeightsToo) {
  std::string definition = kLinearDefinition;
  const std::string reference = R"("reference": "def run(x, w):\n    return x @ w.T\n")";
  const auto at = definition.find(reference);
  ASSERT_NE(at, std::string::npos);
  definition.replace(at, reference.size(),
                     R"("custom_inputs_entrypoint": "make_inputs",
  "reference": "import torch\ndef make_inputs(axes, device):\n    return {'x': torch.randn(axes['rows'], 512, device=device), 'w': 0.1 * torch.randn(512, 512, device=device)}\ndef run(x, w):\n    return x @ w.T\n")");
  temp_.write("custom/definition.json", definition);
  temp_.write(
      "custom/workload.jsonl",
      R"({"uuid":"c","axes":{"rows":4},"inputs":{"x":{"type":"custom"},"w":{"type":"custom"}}}
)");
  Problem problem = load_problem(temp_ / "custom");
  const Workload& workload = problem.workloads.front();
  ASSERT_EQ(shared_parameter_inputs(problem.definition, workload, 1 << 20),
            std::vector<std::string>{"w"});
  Oracle oracle(options("custom-oracle", 1 << 20));
  oracle.prepare(problem, 3);
  ASSERT_FALSE(oracle.reference_error(problem, workload).has_value())
      << *oracle.reference_error(problem, workload);
  const auto first = oracle.inputs(problem, workload, 0);
  for (int trial = 1; trial < 3; ++trial) {
    const auto inputs = oracle.inputs(problem, workload, trial);
    EXPECT_EQ(inputs->at("w").bytes, first->at("w").bytes) << "trial " << trial;
    EXPECT_NE(inputs->at("x").bytes, first->at("x").bytes) << "trial " << trial;
    const HostTensor& out = oracle.expected(problem, workload, trial)->at("out");
    const HostTensor& x = inputs->at("x");
    const HostTensor& w = inputs->at("w");
    double want = 0;  // one element is enough to tie the output to these inputs
    for (int64_t i = 0; i < 512; ++i) want += x.at(3 * 512 + i) * w.at(7 * 512 + i);
    EXPECT_NEAR(out.at(3 * 512 + 7), want, 1e-3 * (1 + std::abs(want))) << "trial " << trial;
  }
  EXPECT_EQ(
      files_ending(temp_ / "custom-oracle" / "shared_linear", ".parameters.safetensors").size(),
      1u);
}

// A native reference draws in C++ and shares the same way: tests/data/oracle/native_scale with
// its weight renamed (away from the *norm_weight heuristic, which draws ones) and 1 MiB long.
TEST(NativeSharedParameters, TrialsShareTheWeightsAndDrawFreshActivations) {
  TempDir temp;
  ScopedEnv no_python("KERNELARC_PYTHON", "/nonexistent/bin/python3");
  const auto dir = temp / "native";
  std::filesystem::copy(fixture("native_scale"), dir, std::filesystem::copy_options::recursive);
  OrderedJson definition = OrderedJson::parse(std::ifstream(dir / "definition.json"));
  definition["axes"]["cols"]["value"] = 1 << 18;
  const OrderedJson inputs = definition["inputs"];  // the reference reads them by position
  definition["inputs"] = {
      {"x", inputs["x"]}, {"gain", inputs["rms_norm_weight"]}, {"alpha", inputs["alpha"]}};
  std::ofstream(dir / "definition.json") << definition.dump();
  std::ofstream(dir / "workload.jsonl")
      << R"({"uuid": "two", "axes": {"rows": 2}, "inputs": {"x": {"type": "random"}, )"
      << R"("gain": {"type": "random"}, "alpha": {"type": "scalar", "value": 0.5}}})"
      << "\n";
  const Problem problem = load_problem(dir);
  ASSERT_EQ(problem.definition.inputs[1].name, "gain");

  OracleOptions options;
  options.cache_dir = temp / "oracle";
  options.worker_executable = KERNELARC_BINARY;
  options.shared_parameter_bytes = 1 << 20;
  Oracle oracle(options);
  oracle.prepare(problem, 2);
  const Workload& workload = problem.workloads.front();
  ASSERT_FALSE(oracle.reference_error(problem, workload).has_value())
      << *oracle.reference_error(problem, workload);
  const auto first = oracle.inputs(problem, workload, 0);
  const auto second = oracle.inputs(problem, workload, 1);
  EXPECT_EQ(first->at("gain").bytes, second->at("gain").bytes);
  EXPECT_NE(first->at("x").bytes, second->at("x").bytes);
  const HostTensor& out = oracle.expected(problem, workload, 1)->at("out");
  for (int64_t i = 0; i < out.numel(); i += 4099) {
    const float want = static_cast<float>(second->at("x").at(i)) *
                       static_cast<float>(second->at("gain").at(i % (1 << 18))) * 0.5F;
    ASSERT_EQ(static_cast<float>(out.at(i)), want) << "element " << i;
  }
  const auto cache = temp / "oracle" / problem.definition.name;
  EXPECT_EQ(files_ending(cache, ".parameters.safetensors").size(), 1u);
  int without_gain = 0;
  for (const auto& file : files_ending(cache, ".inputs.safetensors"))
    without_gain += read_safetensors(file).contains("gain") ? 0 : 1;
  EXPECT_EQ(without_gain, 2);  // the trials; the twin holds every input
}

}  // namespace
}  // namespace kernelarc

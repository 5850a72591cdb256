// `kernelarc import kernelbench` on the KernelBench-format files in tests/data/kernelbench: the
// problem it writes loads, has the shapes the file's get_inputs() gave, and its reference (run by
// the oracle on the CPU) computes what the file's Model computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "cli_test_support.h"
#include "core/problem.h"
#include "core/safetensors.h"
#include "core/test_support.h"
#include "oracle/oracle.h"
#include "oracle/python_bridge.h"

namespace kernelarc {
namespace {

using testing::TempDir;

std::filesystem::path sample(const std::string& name) {
  return std::filesystem::path(KERNELARC_SOURCE_DIR) / "tests/data/kernelbench" / name;
}

std::vector<std::string> names_of(const std::vector<TensorSpec>& specs) {
  std::vector<std::string> names;
  for (const TensorSpec& spec : specs) names.push_back(spec.name);
  return names;
}

class ImportKernelBenchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Detected once: each detection starts an interpreter and imports torch.
    static const std::string missing = [] {
      TempDir scratch;
      try {
        PythonBridge("", "cpu", std::chrono::seconds(120)).description(scratch / "detect");
        return std::string();
      } catch (const InputError& error) {
        return std::string(error.what());
      }
    }();
    if (!missing.empty()) GTEST_SKIP() << "no Python with torch: " << missing;
  }

  /// Imports tests/data/kernelbench/<file> and loads the problem it wrote.
  Problem import_sample(const std::string& file, const std::string& name) {
    const CommandResult result = run(fmt_args(file));
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find("as problem " + name), std::string::npos) << result.output;
    return load_problem(temp_ / "out" / name);
  }

  std::string fmt_args(const std::string& file) const {
    return "import kernelbench " + sample(file).string() + " " + (temp_ / "out").string();
  }

  /// The oracle's inputs and expected outputs of the problem's one workload, trial 0.
  std::pair<TensorMap, TensorMap> reference(const Problem& problem, uint64_t seed = 200) {
    OracleOptions options;
    options.cache_dir = temp_ / ("oracle-" + std::to_string(seed));
    options.seed = seed;
    Oracle oracle(options);
    const Workload& workload = problem.workloads.at(0);
    EXPECT_EQ(oracle.reference_error(problem, workload), std::nullopt);
    return {*oracle.inputs(problem, workload, 0), *oracle.expected(problem, workload, 0)};
  }

  TempDir temp_;
};

TEST_F(ImportKernelBenchTest, MatmulReluTakesAxesFromModuleConstantsAndComputesTheModel) {
  const Problem problem = import_sample("matmul_relu.py", "matmul_relu");
  const Definition& def = problem.definition;
  ASSERT_EQ(def.axes.size(), 3u);
  EXPECT_EQ(def.find_axis("M")->value, 64);
  EXPECT_EQ(def.find_axis("K")->value, 96);
  EXPECT_EQ(def.find_axis("N")->value, 48);
  // "A" would get the input generator's decay-rate values, not get_inputs()'s randn.
  EXPECT_EQ(names_of(def.inputs), (std::vector<std::string>{"A_input", "B"}));
  EXPECT_EQ(*def.inputs[0].shape, (std::vector<std::string>{"M", "K"}));
  EXPECT_EQ(*def.inputs[1].shape, (std::vector<std::string>{"K", "N"}));
  EXPECT_EQ(def.inputs[0].dtype, DType::Float32);
  ASSERT_EQ(names_of(def.outputs), std::vector<std::string>{"output"});
  EXPECT_EQ(*def.outputs[0].shape, (std::vector<std::string>{"M", "N"}));
  EXPECT_EQ(def.ext.bytes, "4 * M * K + 4 * K * N + 4 * M * N");
  ASSERT_EQ(problem.workloads.size(), 1u);
  EXPECT_DOUBLE_EQ(problem.workloads[0].tolerance.max_atol, 1e-2);
  EXPECT_DOUBLE_EQ(problem.workloads[0].tolerance.max_rtol, 1e-2);

  const auto [inputs, expected] = reference(problem);
  const HostTensor& a = inputs.at("A_input");
  const HostTensor& b = inputs.at("B");
  const HostTensor& out = expected.at("output");
  ASSERT_EQ(out.shape, (std::vector<int64_t>{64, 48}));
  double largest_error = 0;
  for (int64_t i = 0; i < 64; ++i) {
    for (int64_t j = 0; j < 48; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < 96; ++k) sum += a.at(i * 96 + k) * b.at(k * 48 + j);
      largest_error = std::max(largest_error, std::abs(std::max(sum, 0.0) - out.at(i * 48 + j)));
    }
  }
  EXPECT_LT(largest_error, 1e-3);
}

TEST_F(ImportKernelBenchTest, LinearGeluBuildsTheModelFromInitInputsUnderAFixedSeed) {
  const Problem problem = import_sample("linear_gelu.py", "linear_gelu");
  const Definition& def = problem.definition;
  EXPECT_EQ(names_of(def.inputs), std::vector<std::string>{"x"});
  EXPECT_EQ(*def.inputs[0].shape, (std::vector<std::string>{"batch_size", "in_features"}));
  EXPECT_EQ(*def.outputs[0].shape, (std::vector<std::string>{"batch_size", "out_features"}));
  EXPECT_EQ(def.find_axis("out_features")->value, 40);
  EXPECT_NE(def.reference.find("class Model(nn.Module)"), std::string::npos)
      << "the reference embeds the file";
  EXPECT_NE(def.description.find("linear_gelu.py"), std::string::npos);

  const auto [inputs, expected] = reference(problem);
  const HostTensor& out = expected.at("output");
  ASSERT_EQ(out.shape, (std::vector<int64_t>{16, 40}));
  double magnitude = 0;
  for (int64_t i = 0; i < out.numel(); ++i) magnitude += std::abs(out.at(i));
  EXPECT_GT(magnitude, 0);

  // The layer's weights come from the reference's own seed, not from the random state the
  // oracle leaves: the same x under another oracle seed gives the same output.
  std::filesystem::create_directories(problem.dir / "blob");
  write_safetensors(problem.dir / "blob" / "x.safetensors", {{"x", inputs.at("x")}});
  std::ofstream(problem.dir / "workload.jsonl")
      << R"({"uuid": "saved", "axes": {}, "inputs": {"x": {"type": "safetensors", )"
      << R"("path": "blob/x.safetensors", "tensor_key": "x"}}})" << '\n';
  const Problem saved = load_problem(problem.dir);
  EXPECT_TRUE(reference(saved, 7).second.at("output").bytes == out.bytes)
      << "the output depends on the oracle's seed: the model was not built under its own";
}

TEST_F(ImportKernelBenchTest, ScalarArgumentBecomesAScalarInputAndTupleOutputsAreNumbered) {
  const Problem problem = import_sample("scaled_softmax.py", "scaled_softmax");
  const Definition& def = problem.definition;
  EXPECT_EQ(names_of(def.inputs), (std::vector<std::string>{"x", "scale"}));
  EXPECT_TRUE(def.inputs[1].is_scalar());
  EXPECT_EQ(def.inputs[1].dtype, DType::Float64);
  EXPECT_EQ(problem.workloads[0].inputs.at("scale").kind, InputKind::Scalar);
  EXPECT_DOUBLE_EQ(problem.workloads[0].inputs.at("scale").scalar_value, 0.5);
  EXPECT_EQ(names_of(def.outputs), (std::vector<std::string>{"output0", "output1"}));
  EXPECT_EQ(*def.outputs[1].shape, std::vector<std::string>{"rows"});

  const auto [inputs, expected] = reference(problem);
  const HostTensor& x = inputs.at("x");
  for (int64_t row = 0; row < 12; ++row) {
    double row_max = -INFINITY, sum = 0;
    for (int64_t col = 0; col < 33; ++col) row_max = std::max(row_max, x.at(row * 33 + col));
    for (int64_t col = 0; col < 33; ++col) sum += std::exp(0.5 * (x.at(row * 33 + col) - row_max));
    EXPECT_NEAR(expected.at("output1").at(row), row_max, 1e-6);
    const double first = std::exp(0.5 * (x.at(row * 33) - row_max)) / sum;
    EXPECT_NEAR(expected.at("output0").at(row * 33), first, 1e-5) << "row " << row;
  }
}

TEST_F(ImportKernelBenchTest, FileWithoutGetInputsIsBadInputNamingFileAndFunction) {
  const CommandResult result = run(fmt_args("no_get_inputs.py"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("no_get_inputs.py"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("get_inputs()"), std::string::npos) << result.output;
  EXPECT_FALSE(std::filesystem::exists(temp_ / "out" / "no_get_inputs"));
}

TEST(ImportKernelBenchCli, MissingFileIsBadInput) {
  TempDir temp;
  const CommandResult result =
      run("import kernelbench " + (temp / "absent.py").string() + " " + temp.path().string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("absent.py"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace kernelarc

// `kernelarc import kernelbench` on the KernelBench-format files in tests/data/kernelbench: the
// problem it writes loads, has the shapes the file's get_inputs() gave, the model's parameters
// and buffers as inputs, and its reference (run by the oracle on the CPU) computes what the
// file's Model computes on them. A directory imports every file in it, one bad file failing
// alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli_test_support.h"
#include "core/json_fields.h"
#include "core/problem.h"
#include "core/test_support.h"
#include "oracle/oracle.h"

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
    if (testing::torch_python().empty()) GTEST_SKIP() << "no Python with torch";
  }

  /// The Python that has torch.
  static const std::string& interpreter() { return testing::torch_python(); }

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
    return {oracle.inputs(problem, workload, 0)->copy(), *oracle.expected(problem, workload, 0)};
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

/// x @ weight^T + bias for x [rows, in], weight [out, in], bias [out], as nn.Linear computes it.
std::vector<double> linear(const HostTensor& x, const HostTensor& weight, const HostTensor& bias) {
  const int64_t rows = x.shape.at(0), in = x.shape.at(1), out = weight.shape.at(0);
  std::vector<double> result(rows * out);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < out; ++j) {
      double sum = bias.at(j);
      for (int64_t k = 0; k < in; ++k) sum += x.at(i * in + k) * weight.at(j * in + k);
      result[i * out + j] = sum;
    }
  }
  return result;
}

TEST_F(ImportKernelBenchTest, LinearParametersBecomeInputsDrawnByTheModulesOwnInit) {
  const Problem problem = import_sample("linear_relu.py", "linear_relu");
  const Definition& def = problem.definition;
  EXPECT_EQ(names_of(def.inputs), (std::vector<std::string>{"x", "gemm_weight", "gemm_bias"}));
  EXPECT_EQ(*def.inputs[1].shape, (std::vector<std::string>{"out_features", "in_features"}));
  EXPECT_EQ(*def.inputs[2].shape, std::vector<std::string>{"out_features"});
  EXPECT_EQ(def.custom_inputs_entrypoint, "make_inputs");
  for (const TensorSpec& spec : def.inputs)
    EXPECT_EQ(problem.workloads[0].inputs.at(spec.name).kind, InputKind::Custom) << spec.name;
  EXPECT_EQ(def.ext.bytes,
            "4 * batch_size * in_features + 4 * out_features * in_features + 4 * out_features + "
            "4 * batch_size * out_features");

  const auto [inputs, expected] = reference(problem);
  const HostTensor& weight = inputs.at("gemm_weight");
  // nn.Linear draws its weights from U(-1/sqrt(in), 1/sqrt(in)); kernelarc's randn would not.
  double largest_weight = 0;
  for (int64_t i = 0; i < weight.numel(); ++i)
    largest_weight = std::max(largest_weight, std::abs(weight.at(i)));
  EXPECT_LE(largest_weight, 1 / std::sqrt(24.0));
  EXPECT_GT(largest_weight, 0.5 / std::sqrt(24.0));

  const std::vector<double> pre = linear(inputs.at("x"), weight, inputs.at("gemm_bias"));
  const HostTensor& out = expected.at("output");
  ASSERT_EQ(out.shape, (std::vector<int64_t>{8, 12}));
  for (int64_t i = 0; i < out.numel(); ++i)
    ASSERT_NEAR(out.at(i), std::max(pre[i], 0.0), 1e-5) << "element " << i;

  // The weights are drawn with the draw, not fixed by the file: another seed, other weights.
  const HostTensor& other = reference(problem, 7).first.at("gemm_weight");
  EXPECT_FALSE(other.bytes == weight.bytes);
}

// torch.compile (dynamo) imports the module of each class it traces by name: the reference must
// register the module it runs the file in, or the compiled baseline fails ("No module named
// 'kernelbench_problem'", seen on the H200 with torch 2.11).
TEST_F(ImportKernelBenchTest, ReferenceModelsModuleIsImportableByName) {
  const Problem problem = import_sample("linear_gelu.py", "linear_gelu");
  std::ofstream(temp_ / "reference.py") << problem.definition.reference;
  std::ofstream(temp_ / "check.py")
      << "import importlib, sys\n"
         "sys.path.insert(0, sys.argv[1])\n"
         "import reference\n"
         "cls = type(reference._MODEL)\n"
         "assert getattr(importlib.import_module(cls.__module__), cls.__name__) is cls\n"
         "print('importable')\n";
  const CommandResult result =
      run_shell(interpreter() + " " + (temp_ / "check.py").string() + " " + (temp_ / "").string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("importable"), std::string::npos) << result.output;
}

TEST_F(ImportKernelBenchTest, LinearGeluComputesTheModuleOnItsDrawnWeights) {
  const Problem problem = import_sample("linear_gelu.py", "linear_gelu");
  const Definition& def = problem.definition;
  EXPECT_EQ(names_of(def.inputs), (std::vector<std::string>{"x", "linear_weight", "linear_bias"}));
  EXPECT_EQ(*def.inputs[0].shape, (std::vector<std::string>{"batch_size", "in_features"}));
  EXPECT_EQ(*def.outputs[0].shape, (std::vector<std::string>{"batch_size", "out_features"}));
  EXPECT_EQ(def.find_axis("out_features")->value, 40);
  EXPECT_NE(def.reference.find("class Model(nn.Module)"), std::string::npos)
      << "the reference embeds the file";
  EXPECT_NE(def.description.find("linear_gelu.py"), std::string::npos);

  const auto [inputs, expected] = reference(problem);
  const std::vector<double> pre =
      linear(inputs.at("x"), inputs.at("linear_weight"), inputs.at("linear_bias"));
  const HostTensor& out = expected.at("output");
  ASSERT_EQ(out.shape, (std::vector<int64_t>{16, 40}));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double gelu = 0.5 * pre[i] * (1 + std::erf(pre[i] / std::sqrt(2.0)));
    ASSERT_NEAR(out.at(i), gelu, 1e-5) << "element " << i;
  }
}

TEST_F(ImportKernelBenchTest, BatchNormBuffersAreInputsAndTrainingModeUsesBatchStatistics) {
  const Problem problem = import_sample("batch_norm.py", "batch_norm");
  const Definition& def = problem.definition;
  EXPECT_EQ(names_of(def.inputs),
            (std::vector<std::string>{"x", "bn_weight", "bn_bias", "bn_running_mean",
                                      "bn_running_var", "bn_num_batches_tracked"}));
  EXPECT_EQ(*def.inputs[4].shape, std::vector<std::string>{"features"});
  EXPECT_EQ(def.inputs[5].dtype, DType::Int64);
  EXPECT_TRUE(def.inputs[5].shape->empty()) << "a 0-d tensor, not a scalar";

  const auto [inputs, expected] = reference(problem);
  const HostTensor& running_var = inputs.at("bn_running_var");
  for (int64_t c = 0; c < running_var.numel(); ++c) EXPECT_GT(running_var.at(c), 0) << c;

  // Training mode: each channel is normalized by the batch's own mean and (biased) variance,
  // whatever the running statistics hold.
  const HostTensor& x = inputs.at("x");
  const HostTensor& out = expected.at("output");
  const int64_t batch = 6, channels = 5, length = 7;
  ASSERT_EQ(out.shape, (std::vector<int64_t>{batch, channels, length}));
  for (int64_t c = 0; c < channels; ++c) {
    double sum = 0, squares = 0;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t l = 0; l < length; ++l) sum += x.at((b * channels + c) * length + l);
    }
    const double mean = sum / (batch * length);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t l = 0; l < length; ++l)
        squares += std::pow(x.at((b * channels + c) * length + l) - mean, 2);
    }
    const double inv_std = 1 / std::sqrt(squares / (batch * length) + 1e-5);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t l = 0; l < length; ++l) {
        const int64_t i = (b * channels + c) * length + l;
        const double want =
            (x.at(i) - mean) * inv_std * inputs.at("bn_weight").at(c) + inputs.at("bn_bias").at(c);
        ASSERT_NEAR(out.at(i), want, 1e-4) << "channel " << c << " element " << i;
      }
    }
  }
}

TEST_F(ImportKernelBenchTest, APlainTensorAttributeIsAnInputLikeABuffer) {
  // `self.hidden = torch.randn(...)` in __init__, reassigned by forward: the model's state
  // though not a buffer. It is an input like a buffer, and the output is computed from it.
  const Problem problem = import_sample("rnn_cell_state.py", "rnn_cell_state");
  EXPECT_EQ(names_of(problem.definition.inputs),
            (std::vector<std::string>{"x", "i2h_weight", "i2h_bias", "hidden"}));
  const auto [inputs, expected] = reference(problem);
  const HostTensor& x = inputs.at("x");
  const HostTensor& hidden = inputs.at("hidden");
  const HostTensor& weight = inputs.at("i2h_weight");
  const HostTensor& out = expected.at("output");
  const int64_t batch = 4, in = 6, width = 5;
  ASSERT_EQ(out.shape, (std::vector<int64_t>{batch, width}));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t o = 0; o < width; ++o) {
      double sum = inputs.at("i2h_bias").at(o);
      for (int64_t i = 0; i < in; ++i) sum += x.at(b * in + i) * weight.at(o * (in + width) + i);
      for (int64_t h = 0; h < width; ++h)
        sum += hidden.at(b * width + h) * weight.at(o * (in + width) + in + h);
      ASSERT_NEAR(out.at(b * width + o), 2 * std::max(sum, 0.0), 1e-5) << b << "," << o;
    }
  }
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

TEST_F(ImportKernelBenchTest, DirectoryImportsEveryFileAndABadOneFailsAlone) {
  const std::filesystem::path report = temp_ / "report.json";
  const CommandResult result = run("import kernelbench " + sample("").string() + " " +
                                   (temp_ / "out").string() + " --report " + report.string());
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("imported 6 of 8 files"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("2 of 8 files could not be imported"), std::string::npos)
      << result.output;
  // The interpreter killed by kills_interpreter.py is replaced for the files after it.
  for (const char* name : {"batch_norm", "linear_gelu", "linear_relu", "matmul_relu",
                           "rnn_cell_state", "scaled_softmax"}) {
    EXPECT_NO_THROW(load_problem(temp_ / "out" / name)) << name;
  }
  const OrderedJson entries = parse_json_text(read_text_file(report), report.string());
  ASSERT_EQ(entries.size(), 8u);
  std::map<std::string, std::string> errors;
  for (const OrderedJson& entry : entries) {
    if (entry.contains("error"))
      errors[std::filesystem::path(entry.at("file").get<std::string>()).filename()] =
          entry.at("error").get<std::string>();
  }
  ASSERT_EQ(errors.size(), 2u) << entries.dump(2);
  EXPECT_NE(errors["no_get_inputs.py"].find("get_inputs()"), std::string::npos);
  // It kills itself as the kernel's out-of-memory killer would: the message says what that
  // most likely was, with the interpreter's peak.
  EXPECT_NE(errors["kills_interpreter.py"].find(
                "killed by signal SIGKILL (Killed), most likely by the kernel's out-of-memory "
                "killer: it peaked at "),
            std::string::npos)
      << errors["kills_interpreter.py"];
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

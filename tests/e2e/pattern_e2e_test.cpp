// End to end through the real executable. On the CPU: for each pattern class a problem written
// as a user would, once as an SOL-ExecBench definition (tests/data/e2e/sol, no kernelarc key)
// and once as a KernelBench file (tests/data/e2e/kernelbench, imported here), is recognized by
// `kernelarc explain` (a hand-written family or the fused one), and the default point of the
// first template that binds passes the guard (`kernelarc templates try`, the cheapest real path:
// one instantiation, one compile, the largest workload). On a GPU: the bundled decoder-layer
// chains, on every workload.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "backend/cuda/cuda_device.h"
#include "cli/cli_test_support.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "core/test_support.h"

namespace kernelarc {
namespace {

using testing::TempDir;

enum class Form { Sol, KernelBench };

struct PatternCase {
  Form form;
  std::string name;                ///< problem directory (Sol) or file stem (KernelBench)
  std::set<std::string> families;  ///< what recognition may call it
};

void PrintTo(const PatternCase& c, std::ostream* out) {
  *out << (c.form == Form::Sol ? "SOL-ExecBench " : "KernelBench ") << c.name;
}

std::string case_name(const ::testing::TestParamInfo<PatternCase>& info) {
  return (info.param.form == Form::Sol ? "Sol_" : "KernelBench_") + info.param.name;
}

std::filesystem::path e2e_data() {
  return std::filesystem::path(KERNELARC_SOURCE_DIR) / "tests/data/e2e";
}

/// The JSON object a command printed (its stderr is mixed in by run()).
OrderedJson printed_json(const CommandResult& result) {
  const std::size_t start = result.output.find("{\n");
  if (start == std::string::npos) return OrderedJson();
  return OrderedJson::parse(result.output.substr(start), nullptr, false);
}

class PatternEndToEnd : public ::testing::TestWithParam<PatternCase> {
 protected:
  void SetUp() override {
    if (testing::torch_python().empty()) GTEST_SKIP() << "no Python with torch";
  }

  /// The problem directory: the SOL-ExecBench one as it is, the KernelBench file imported.
  std::filesystem::path problem_dir() {
    const PatternCase& c = GetParam();
    if (c.form == Form::Sol) return e2e_data() / "sol" / c.name;
    const std::filesystem::path file = e2e_data() / "kernelbench" / (c.name + ".py");
    const CommandResult imported =
        run("import kernelbench " + file.string() + " " + (temp_ / "problems").string());
    EXPECT_EQ(imported.exit_code, 0) << imported.output;
    return temp_ / "problems" / c.name;
  }

  std::string workspace() const { return " --workspace " + (temp_ / "ws").string(); }

  TempDir temp_;
};

TEST_P(PatternEndToEnd, IsRecognizedAndItsFirstBindingTemplatePassesTheGuard) {
  const std::filesystem::path dir = problem_dir();
  ASSERT_TRUE(std::filesystem::exists(dir / "definition.json")) << dir;

  const CommandResult explained = run("explain " + dir.string() + " --json" + workspace());
  ASSERT_EQ(explained.exit_code, 0) << explained.output;
  const OrderedJson explanation = printed_json(explained);
  ASSERT_TRUE(explanation.is_object()) << explained.output;
  const OrderedJson& recognition = explanation.at("recognition");
  const std::string source = recognition.value("source", "");
  const std::string family = recognition.value("family", "");
  EXPECT_TRUE(source == "matched" || source == "fused")
      << source << ": " << recognition.value("reason", "") << "\n"
      << recognition.dump(2);
  EXPECT_TRUE(GetParam().families.count(family))
      << "recognized as '" << family << "': " << recognition.value("summary", "")
      << recognition.value("reason", "");

  std::string template_name;
  std::string why_none;
  for (const OrderedJson& verdict : explanation.at("templates")) {
    if (verdict.at("binds").get<bool>()) {
      template_name = verdict.at("template").get<std::string>();
      break;
    }
    why_none += verdict.at("template").get<std::string>() + ": " +
                verdict.at("reason").get<std::string>() + "\n";
  }
  ASSERT_FALSE(template_name.empty())
      << "no cpu template binds: " << why_none << explanation.value("no_template", "");

  const CommandResult tried =
      run("templates try " + dir.string() + " " + template_name + workspace() +
          " --trials 2 --warmup 0 --iterations 3 --timing-budget 0.05 --no-baseline --workloads "
          "largest");
  EXPECT_EQ(tried.exit_code, 0) << tried.output;
  EXPECT_NE(tried.output.find("workloads: 1 of 1 PASSED"), std::string::npos) << tried.output;
}

std::vector<PatternCase> cases() {
  const std::set<std::string> fused = {"fused"};
  return {
      // element-wise chain with a broadcast row and a scalar
      {Form::Sol, "ew_chain", {"elementwise", "fused"}},
      {Form::KernelBench, "ew_chain", {"elementwise", "fused"}},
      // row norms
      {Form::Sol, "rmsnorm_bf16", {"rmsnorm", "fused"}},
      {Form::KernelBench, "rmsnorm", {"rmsnorm", "fused"}},
      {Form::Sol, "layernorm", {"layernorm", "fused"}},
      {Form::KernelBench, "layernorm", {"layernorm", "fused"}},
      // softmax and log_softmax
      {Form::Sol, "softmax", {"softmax", "fused"}},
      {Form::KernelBench, "softmax", {"softmax", "fused"}},
      {Form::Sol, "log_softmax", {"softmax", "fused"}},
      {Form::KernelBench, "log_softmax", {"softmax", "fused"}},
      // a reduction over a middle axis: mean and argmax, sum and max
      {Form::Sol, "mean_middle", {"reduce", "fused"}},
      {Form::Sol, "argmax_middle", {"reduce", "fused"}},
      {Form::KernelBench, "sum_middle", {"reduce", "fused"}},
      {Form::KernelBench, "max_middle", {"reduce", "fused"}},
      // losses
      {Form::Sol, "mse_loss", fused},
      {Form::KernelBench, "mse_loss", fused},
      {Form::Sol, "cross_entropy", fused},
      {Form::KernelBench, "cross_entropy", fused},
      {Form::Sol, "kl_div", fused},
      {Form::KernelBench, "kl_div", fused},
      // scans: inclusive, reverse (exclusive in the SOL form)
      {Form::Sol, "cumsum", fused},
      {Form::KernelBench, "cumsum", fused},
      {Form::Sol, "reverse_exclusive_cumsum", fused},
      {Form::KernelBench, "reverse_cumsum", fused},
      // a GEMM with a bias and activation epilogue
      {Form::Sol, "linear_bias_relu", {"gemm", "fused"}},
      {Form::KernelBench, "linear_bias_relu", {"gemm", "fused"}},
      // a batched matmul with a transposed operand
      {Form::Sol, "bmm_transposed", {"gemm", "fused"}},
      {Form::KernelBench, "bmm_transposed", {"gemm", "fused"}},
      // a gated pair of projections
      {Form::Sol, "swiglu", fused},
      // bfloat16 products of 3-D activations: stored rounded (gated), or with a residual added
      // across the view back from rows
      {Form::Sol, "gated_gelu_bf16", fused},
      {Form::Sol, "linear_residual_bf16", {"gemm", "fused"}},
      {Form::KernelBench, "swiglu", fused},
      // a whole gated MLP, weights named neutrally: the graph says which is the gate
      {Form::Sol, "gated_mlp", {"mlp"}},
      // the two blocks of a decoder layer around attention and the MLP's GEMMs: residual add +
      // RMSNorm -> QKV projection -> rotate-half RoPE, and residual add + RMSNorm -> SwiGLU MLP
      {Form::Sol, "decoder_qkv_rope", fused},
      {Form::Sol, "decoder_mlp_block", fused},
  };
}

INSTANTIATE_TEST_SUITE_P(Patterns, PatternEndToEnd, ::testing::ValuesIn(cases()), case_name);

// On a GPU: the bundled decoder-layer chains (unannotated, Llama-3-8B sizes) are recognized for
// CUDA and the first template that binds passes the guard on every workload, decode to prefill.
class GpuDecoderChain : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuDecoderChain, IsServedOnCudaAndPassesTheGuardOnEveryWorkload) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  if (testing::torch_python().empty()) GTEST_SKIP() << "no Python with torch";
  const TempDir temp;
  const std::string dir =
      (std::filesystem::path(KERNELARC_SOURCE_DIR) / "problems/cuda" / GetParam()).string();
  const std::string workspace = " --workspace " + (temp / "ws").string();
  const CommandResult explained = run("explain " + dir + " --device cuda:0 --json" + workspace);
  ASSERT_EQ(explained.exit_code, 0) << explained.output;
  const OrderedJson explanation = printed_json(explained);
  ASSERT_TRUE(explanation.is_object()) << explained.output;
  EXPECT_EQ(explanation.at("recognition").value("source", ""), "fused") << explained.output;
  std::string template_name;
  for (const OrderedJson& verdict : explanation.at("templates"))
    if (verdict.at("binds").get<bool>() && template_name.empty())
      template_name = verdict.at("template").get<std::string>();
  ASSERT_FALSE(template_name.empty()) << explained.output;
  const CommandResult tried =
      run("templates try " + dir + " " + template_name + " --device cuda:0" + workspace +
          " --trials 2 --warmup 1 --iterations 3 --timing-budget 0.05 --no-baseline");
  EXPECT_EQ(tried.exit_code, 0) << tried.output;
  EXPECT_NE(tried.output.find("workloads: 7 of 7 PASSED"), std::string::npos) << tried.output;
}

INSTANTIATE_TEST_SUITE_P(GpuBundled, GpuDecoderChain,
                         ::testing::Values("decoder_qkv_rope_bf16_llama3_8b",
                                           "decoder_mlp_block_bf16_llama3_8b"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace kernelarc

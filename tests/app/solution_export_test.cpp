// `kernelarc export`'s generator: a kernel ABI solution and a device-only CUDA kernel become a
// PyTorch extension in SOL-ExecBench's (or FlashInfer-Bench's) form. The generated sources are
// checked for what the other harness relies on; nvcc, where present, compiles the launchers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app/expr_to_cpp.h"
#include "app/solution_export.h"
#include "core/error.h"
#include "core/problem.h"
#include "core/test_support.h"

namespace kernelarc {
namespace {

namespace fs = std::filesystem;
using testing::input_error_of;
using testing::TempDir;

const fs::path kRmsnormProblem = fs::path(KERNELARC_SOURCE_DIR) / "problems/cpu/rmsnorm_f32";

// A definition with a var, a const and an expr axis and a scalar input, for a device-only kernel.
Definition scale_rows_definition() {
  return parse_definition(OrderedJson::parse(R"({
    "name": "scale_rows",
    "axes": {"batch": {"type": "var"}, "hidden": {"type": "var"}, "groups": {"type": "const", "value": 4},
             "group_size": {"type": "expr", "expression": "hidden // groups"}},
    "inputs": {"x": {"shape": ["batch", "hidden"], "dtype": "float32"},
               "weight": {"shape": ["hidden"], "dtype": "float32"},
               "eps": {"shape": null, "dtype": "float32"}},
    "outputs": {"y": {"shape": ["batch", "hidden"], "dtype": "float32"}},
    "reference": "def run(x, weight, eps):\n    return x * weight + eps\n"})"),
                          "scale_rows.json");
}

constexpr const char* kScaleRowsKernel = R"(extern "C" __global__ void scale_rows(
    const float* x, const float* weight, const float* eps, float* y, long long batch,
    long long hidden, long long groups, long long group_size) {
  extern __shared__ float staged[];
  const long long row = blockIdx.x;
  for (long long c = threadIdx.x; c < hidden; c += BLOCK) {
    staged[threadIdx.x] = x[row * hidden + c] * weight[c];
    y[row * hidden + c] = staged[threadIdx.x] + *eps;
  }
}
)";

Solution scale_rows_solution(const std::string& arch = "sm_90a") {
  OrderedJson json = OrderedJson::parse(R"({
    "name": "scale_rows_template", "definition": "scale_rows",
    "spec": {"languages": ["cuda_cpp"], "entry_point": "kernel.cu::scale_rows"},
    "sources": [{"path": "kernel.cu", "content": ""}],
    "kernelarc": {
      "launch": {"grid": ["batch"], "block": ["BLOCK"], "shared_bytes": "BLOCK * 4 * 64",
                 "cluster": [1, 1, 1]},
      "knobs": {"BLOCK": 256},
      "variants": [{"when": "hidden <= 1024", "knobs": {"BLOCK": 128}},
                   {"when": "group_size // 2 > 4096 and batch % 2 == 0", "knobs": {"BLOCK": 512}}]}})");
  json["sources"][0]["content"] = kScaleRowsKernel;
  if (!arch.empty()) json["kernelarc"]["arch"] = arch;
  return parse_solution(json, "scale_rows/solution.json", ".");
}

const SourceFile* export_source(const Solution& exported, const std::string& path) {
  for (const SourceFile& source : exported.sources)
    if (source.path == path) return &source;
  return nullptr;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

Solution export_rmsnorm(const ExportOptions& options) {
  const Problem problem = load_problem(kRmsnormProblem);
  return export_torch_solution(load_solution(kRmsnormProblem / "solutions/optimized"),
                               problem.definition, options);
}

TEST(SolutionExport, AbiSolutionGetsADestinationPassingEntryPoint) {
  const Solution exported = export_rmsnorm({});
  EXPECT_EQ(exported.entry_file, "main.cpp");
  EXPECT_EQ(exported.entry_symbol, "run");
  EXPECT_EQ(exported.binding, "torch");
  EXPECT_EQ(exported.author, "kernelarc");
  EXPECT_EQ(exported.languages, std::vector<std::string>{"cuda_cpp"});
  EXPECT_TRUE(exported.destination_passing_style);
  ASSERT_NE(export_source(exported, "kernelarc/abi.h"), nullptr);
  // The solution's own main.cpp is compiled through its wrapper only.
  ASSERT_NE(export_source(exported, "main.cpp.inc"), nullptr);
  ASSERT_NE(export_source(exported, "ka_base_main.cpp"), nullptr);
  const std::string& entry = export_source(exported, "main.cpp")->content;
  EXPECT_NE(entry.find("void run(torch::Tensor x_, torch::Tensor weight_, torch::Tensor output_)"),
            std::string::npos)
      << entry;
  EXPECT_NE(entry.find("check_dim(weight_, \"weight\", 0, \"hidden_size\", axis_hidden_size_)"),
            std::string::npos);
  EXPECT_NE(entry.find("ka_run_ka_base(inputs, 2, outputs, 1, nullptr"), std::string::npos);
  EXPECT_NE(entry.find("PYBIND11_MODULE(TORCH_EXTENSION_NAME"), std::string::npos);
  EXPECT_NE(std::find(exported.cflags.begin(), exported.cflags.end(), "-fopenmp"),
            exported.cflags.end());
}

TEST(SolutionExport, ValueReturningEntryPointAllocatesAndReturnsTheOutputs) {
  ExportOptions options;
  options.destination_passing_style = false;
  const Solution exported = export_rmsnorm(options);
  EXPECT_FALSE(exported.destination_passing_style);
  const std::string& entry = export_source(exported, "main.cpp")->content;
  EXPECT_NE(entry.find("torch::Tensor run(torch::Tensor x_, torch::Tensor weight_)"),
            std::string::npos)
      << entry;
  EXPECT_NE(entry.find("torch::empty({axis_batch_size_, axis_hidden_size_}"), std::string::npos);
  EXPECT_NE(entry.find("return output_;"), std::string::npos);
}

TEST(SolutionExport, TemplateVariantsGetOneLauncherAndOneDispatchEach) {
  const Definition definition = scale_rows_definition();
  const Solution exported = export_torch_solution(scale_rows_solution(), definition, {});
  const std::string& entry = export_source(exported, "main.cpp")->content;
  for (const std::string suffix : {"ka_v0", "ka_v1", "ka_base"}) {
    const SourceFile* launcher = export_source(exported, "ka_launch_" + suffix + ".cu");
    ASSERT_NE(launcher, nullptr) << suffix;
    EXPECT_EQ(occurrences(entry, "ka_launch_" + suffix + "(pointers, axes, stream);"), 1u);
    EXPECT_NE(launcher->content.find("#define scale_rows scale_rows_" + suffix), std::string::npos);
    EXPECT_NE(launcher->content.find("#include \"kernel.cu.inc\""), std::string::npos);
    EXPECT_NE(launcher->content.find("cudaLaunchAttributeClusterDimension"), std::string::npos);
    EXPECT_NE(launcher->content.find("cudaFuncAttributeMaxDynamicSharedMemorySize"),
              std::string::npos);
  }
  EXPECT_NE(export_source(exported, "ka_launch_ka_v0.cu")->content.find("#define BLOCK 128"),
            std::string::npos);
  EXPECT_NE(export_source(exported, "ka_launch_ka_base.cu")->content.find("#define BLOCK 256"),
            std::string::npos);
  // The kernel file itself is no translation unit of its own.
  EXPECT_EQ(export_source(exported, "kernel.cu"), nullptr);
  EXPECT_EQ(occurrences(entry, "if ("), 2u) << entry;
  EXPECT_NE(entry.find("} else {"), std::string::npos);
  EXPECT_NE(entry.find("const long long axis_group_size_ = ka_export::floordiv(axis_hidden_, "
                       "axis_groups_);"),
            std::string::npos)
      << entry;
  // A Python float reaches the kernel as a pointer to a device scalar, as kernelarc passes it.
  EXPECT_NE(entry.find("double eps_"), std::string::npos);
  EXPECT_NE(entry.find("torch::full({}, eps_"), std::string::npos);
  EXPECT_NE(entry.find("at::cuda::getCurrentCUDAStream()"), std::string::npos);
}

TEST(SolutionExport, ArchitectureBecomesAGencodeFlagBesideO3) {
  const Solution exported =
      export_torch_solution(scale_rows_solution(), scale_rows_definition(), {});
  const auto& flags = exported.cuda_cflags;
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-gencode=arch=compute_90a,code=sm_90a"),
            flags.end());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-O3"), flags.end());
  // NVRTC builds the kernel without fast math, so the export does too.
  EXPECT_EQ(std::find(flags.begin(), flags.end(), "--use_fast_math"), flags.end());
}

TEST(SolutionExport, UnsupportedLanguageNamesSpecLanguages) {
  const Solution python = parse_solution(OrderedJson::parse(R"({
    "name": "py", "definition": "rmsnorm_f32",
    "spec": {"languages": ["pytorch"], "entry_point": "main.py::run"},
    "sources": [{"path": "main.py", "content": "def run(x, weight): pass\n"}]})"),
                                         "py/solution.json", ".");
  const Problem problem = load_problem(kRmsnormProblem);
  const std::string error =
      input_error_of([&] { export_torch_solution(python, problem.definition, {}); });
  EXPECT_NE(error.find("py: spec.languages"), std::string::npos) << error;
  EXPECT_NE(error.find("pytorch"), std::string::npos) << error;
}

TEST(SolutionExport, FlashInferFormatNamesOneLanguageAndRefusesAnArchSuffix) {
  ExportOptions options;
  options.format = ExportFormat::FlashInfer;
  const OrderedJson json = exported_solution_json(export_rmsnorm(options), options.format);
  EXPECT_EQ(json["spec"]["language"], "cpp");
  EXPECT_EQ(json["spec"]["binding"], "torch");
  EXPECT_EQ(json["spec"]["entry_point"], "main.cpp::run");
  EXPECT_FALSE(json["spec"].contains("compile_options"));
  const std::string error = input_error_of(
      [&] { export_torch_solution(scale_rows_solution(), scale_rows_definition(), options); });
  EXPECT_NE(error.find("kernelarc.arch"), std::string::npos) << error;
}

TEST(SolutionExport, FormatNamesRoundTrip) {
  for (ExportFormat format : {ExportFormat::SolExecBench, ExportFormat::FlashInfer})
    EXPECT_EQ(export_format_from_name(export_format_name(format)), format);
  EXPECT_FALSE(export_format_from_name("tvm"));
}

TEST(ExprToCpp, KeepsPythonSemanticsThroughHelpers) {
  const auto variable = [](const std::string& name) { return name == "n" ? "n_" : ""; };
  EXPECT_EQ(expr_to_cpp("(n + 1) // 2", variable), "ka_export::floordiv((n_ + 1LL), 2LL)");
  EXPECT_EQ(expr_to_cpp("-n % 3 == 0 and not n", variable),
            "static_cast<long long>((static_cast<long long>((ka_export::floormod((-n_), 3LL)) == "
            "(0LL))) != 0 && (static_cast<long long>((n_) == 0)) != 0)");
  EXPECT_EQ(expr_to_cpp("1 < n <= 8", variable),
            "static_cast<long long>((1LL) < (n_) && (n_) <= (8LL))");
  EXPECT_EQ(expr_to_cpp("min(n, 4) ** 2", variable),
            "ka_export::power(ka_export::min({n_, 4LL}), 2LL)");
  EXPECT_THROW(expr_to_cpp("m + 1", variable), ExprError);
}

// The launchers include no PyTorch header, so nvcc alone can compile them here.
TEST(SolutionExport, LaunchersCompileWithNvcc) {
  const char* found = std::getenv("KERNELARC_NVCC");
  const std::string nvcc = found ? found : "/usr/local/cuda/bin/nvcc";
  if (!fs::exists(nvcc)) GTEST_SKIP() << "no nvcc at " << nvcc << " (set KERNELARC_NVCC)";
  const Solution exported =
      export_torch_solution(scale_rows_solution(), scale_rows_definition(), {});
  TempDir dir;
  for (const SourceFile& source : exported.sources) dir.write(source.path, source.content);
  for (const std::string suffix : {"ka_v0", "ka_base"}) {
    const std::string command = nvcc + " -c -O3 -std=c++17 " +
                                "-gencode=arch=compute_90a,code=sm_90a -I " + dir.path().string() +
                                " " + (dir / ("ka_launch_" + suffix + ".cu")).string() + " -o " +
                                (dir / (suffix + ".o")).string() + " 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
}

}  // namespace
}  // namespace kernelarc

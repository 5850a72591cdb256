// Solutions written as PyTorch extensions (`binding: torch`, SOL-ExecBench's form) through the
// guard: recognized, built with the Python that has torch, hosted in the worker and checked like
// any other solution, in both calling styles.
#include "eval/torch_binding.h"

#include <gtest/gtest.h>

#include "backend/cuda/cuda_device.h"
#include "eval/guard_harness.h"

namespace kernelarc {
namespace {

using testing::GuardHarness;

const std::filesystem::path kSource = KERNELARC_SOURCE_DIR;
const std::filesystem::path kData = kSource / "tests/data/torch_binding";

Solution extension(std::string binding, std::string entry, std::string content) {
  Solution solution;
  solution.binding = std::move(binding);
  solution.entry_symbol = std::move(entry);
  solution.sources = {{"main.cpp", std::move(content)}};
  return solution;
}

TEST(TorchBinding, RecognizesATorchExtensionByItsBindingOrItsModule) {
  EXPECT_TRUE(uses_torch_binding(extension("torch", "run", "")));
  // SOL-ExecBench makes torch the default binding of C++ solutions.
  EXPECT_TRUE(uses_torch_binding(extension("", "run", "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)")));
  EXPECT_FALSE(uses_torch_binding(extension("", "ka_run", "PYBIND11_MODULE(x, m)")));
  EXPECT_FALSE(uses_torch_binding(extension("", "run", "int run() { return 0; }")));
  EXPECT_FALSE(uses_torch_binding(extension("tvm-ffi", "run", "PYBIND11_MODULE(x, m)")));
}

TEST(TorchBinding, CudaSourcesAreRefusedOnTheCpuBeforeAnyBuild) {
  Solution solution = extension("torch", "run", "");
  solution.sources = {{"kernel.cu", "__global__ void k() {}"}};
  const CompileResult built = build_torch_binding(
      solution, Definition{}, {.cache_dir = testing::harness_workspace(), .cuda = false});
  EXPECT_FALSE(built.ok);
  EXPECT_NE(built.log.find("kernel.cu is CUDA"), std::string::npos) << built.log;
}

/// Why this machine cannot build a torch extension (no Python with torch, no torch headers), or
/// "" when it can: the extension tests skip with that reason.
std::string unbuildable(const Trace& trace) {
  for (const char* reason : {"no Python with torch", "torch/extension.h", "Python.h"})
    if (trace.log.find(reason) != std::string::npos) return trace.log;
  return "";
}

TEST(TorchBinding, ValueReturningAndDestinationPassingExtensionsPassTheGuard) {
  GuardHarness harness(kSource / "problems/cpu/rmsnorm_f32", "cpu", [](GuardOptions&) {});
  const Workload workload = harness.pick_workload(/*largest=*/false);
  for (const char* name : {"rmsnorm_value", "rmsnorm_dps"}) {
    const Trace trace = harness.evaluate(kData / name, workload);
    if (const std::string why = unbuildable(trace); !why.empty()) GTEST_SKIP() << why;
    EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed)) << name << trace.log;
    EXPECT_EQ(trace.environment.value("compiler", ""),
              "torch.utils.cpp_extension (binding: torch)");
  }
  // The two differ only in their entry point: one extension build, an ABI library each.
  int extensions = 0, libraries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(harness.workspace() / "build/torch"))
    ++(entry.path().filename().string().starts_with("ext-") ? extensions : libraries);
  EXPECT_EQ(extensions, 1);
  EXPECT_EQ(libraries, 2);
}

TEST(TorchBinding, APyTorchSolutionIsHostedWithoutABuild) {
  Solution python = load_solution(kData / "rmsnorm_python");
  EXPECT_TRUE(is_pytorch_solution(python));
  python.languages = {"triton"};  // a JIT compiler's programs cannot run in the worker
  EXPECT_FALSE(is_pytorch_solution(python));

  GuardHarness harness(kSource / "problems/cpu/rmsnorm_f32", "cpu", [](GuardOptions&) {});
  const Trace trace = harness.evaluate(kData / "rmsnorm_python", harness.pick_workload(false));
  if (const std::string why = unbuildable(trace); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed)) << trace.log;
  EXPECT_EQ(trace.environment.value("compiler", ""),
            "python (PyTorch solution, hosted in the worker)");
}

TEST(GpuTorchBinding, ACudaExtensionPassesEveryWorkload) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  GuardHarness harness(kSource / "problems/cuda/rmsnorm_bf16", "cuda:0", [](GuardOptions&) {});
  const Solution solution = load_solution(kData / "rmsnorm_bf16_cuda");
  for (const Trace& trace : harness.guard().evaluate(harness.problem(), solution)) {
    if (const std::string why = unbuildable(trace); !why.empty()) GTEST_SKIP() << why;
    EXPECT_EQ(status_name(trace.status), status_name(EvalStatus::Passed)) << trace.log;
  }
}

}  // namespace
}  // namespace kernelarc

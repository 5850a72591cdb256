// The CUDA attention problems whose inputs a make_inputs draws (page tables, sequence lengths) on
// the CPU: those draws, the float32 references and the attention family's binder meet the CPU
// template, which must pass the guard on a small workload of each. This is the only check of
// those references on a machine without a GPU; the CUDA templates run on them in the gpu suite.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "eval/guard_harness.h"
#include "source_dir.h"
#include "synth/bound_template.h"

namespace kernelarc {
namespace {

std::vector<std::filesystem::path> cuda_attention_problems() {
  std::vector<std::filesystem::path> dirs;
  for (const auto& entry : std::filesystem::directory_iterator(kSource / "problems/cuda")) {
    const auto definition = entry.path() / "definition.json";
    if (!std::filesystem::exists(definition)) continue;
    const Definition def = load_definition(definition);
    if (def.ext.op_family == "attention" && !def.custom_inputs_entrypoint.empty())
      dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::string problem_name(const ::testing::TestParamInfo<std::filesystem::path>& info) {
  return info.param.filename().string();
}

/// The third smallest workload (by the product of its axes): past the one-token cases, so pages
/// are shuffled and sequences differ, and still small for float32 references on two cores.
Problem with_small_workload(Problem problem) {
  auto size = [](const Workload& workload) {
    int64_t product = 1;
    for (const auto& [name, value] : workload.axes) product *= value;
    return product;
  };
  std::vector<Workload> workloads = problem.workloads;
  std::sort(workloads.begin(), workloads.end(),
            [&](const Workload& a, const Workload& b) { return size(a) < size(b); });
  problem.workloads = {workloads[std::min<std::size_t>(2, workloads.size() - 1)]};
  return problem;
}

class CudaAttentionProblemOnCpu : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(CudaAttentionProblemOnCpu, TheCpuTemplatePassesTheGuard) {
  testing::GuardHarness harness(with_small_workload(load_problem(GetParam())), "cpu",
                                [](GuardOptions& options) {
                                  options.correctness_trials = 2;
                                  options.warmup = 0;
                                  options.iterations = 3;
                                  options.timing_budget_s = 0.05;
                                  options.time_baselines = false;
                                  options.auto_calibrate = false;
                                });
  const std::vector<KernelTemplate> library = load_template_library(kSource / "templates");
  const auto kernel = std::find_if(library.begin(), library.end(), [](const KernelTemplate& k) {
    return k.name == "attention_cpu";
  });
  ASSERT_NE(kernel, library.end());
  const BoundTemplate bound(*kernel, harness.problem());
  const Solution solution = bound.instantiate(bound.space().space().default_point());
  const auto traces =
      harness.guard().evaluate(harness.problem(), solution, harness.problem().workloads);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces.front().status, EvalStatus::Passed)
      << format_axes(harness.problem().workloads.front().axes) << ": " << traces.front().log;
}

INSTANTIATE_TEST_SUITE_P(Problems, CudaAttentionProblemOnCpu,
                         ::testing::ValuesIn(cuda_attention_problems()), problem_name);

}  // namespace
}  // namespace kernelarc

// The facts a prompt must carry on each device (issue 25, item 7): the answer format and the
// flag example of the device's language, the code of the candidates a draft is shown, the run's
// own workloads, no workspace candidate id, the parent's log once in a repair, and a cache
// identity that does not change with measured times.
#include <gtest/gtest.h>

#include <string>

#include "codesynth/prompt_builder.h"
#include "source_dir.h"

namespace kernelarc {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const Problem& cpu_problem() {
  static const Problem problem = load_problem(kSource.string() + "/problems/cpu/rmsnorm_f32");
  return problem;
}
const Problem& cuda_problem() {
  static const Problem problem = load_problem(kSource.string() + "/problems/cuda/rmsnorm_bf16");
  return problem;
}

CandidateContext baseline(const std::string& solution_dir, int64_t id) {
  CandidateContext context;
  context.candidate_id = id;
  context.solution = load_solution(solution_dir);
  context.status = EvalStatus::Passed;
  context.results = "batch_size=7: 12.5 us, 1.00x";
  return context;
}

SynthesisRequest draft(const Problem& problem, const std::string& device,
                       const std::string& solution_dir) {
  SynthesisRequest request;
  request.problem = &problem;
  request.workloads = {problem.workloads.at(1)};  // --workloads selected one
  request.device = device;
  request.hardware = device + ": 8 cores; ISA avx512f, avx2; L1d 48 KiB per core";
  request.agent = "explorer";
  request.move = SynthesisMove::Draft;
  request.inspirations = {baseline(solution_dir, 4711)};
  return request;
}

std::string user_message(const SynthesisRequest& request) {
  return build_prompt(load_prompt_templates(""), request).messages.at(0).content;
}

TEST(PromptDevice, CpuDraftCarriesTheCpuFacts) {
  const SynthesisRequest request =
      draft(cpu_problem(), "cpu", kSource.string() + "/problems/cpu/rmsnorm_f32/solutions/naive");
  const std::string prompt = user_message(request);
  EXPECT_TRUE(contains(prompt, "```cpp main.cpp")) << prompt;
  EXPECT_FALSE(contains(prompt, "```cuda kernel.cu")) << prompt;
  EXPECT_TRUE(contains(prompt, R"({"cflags": ["-O3", "-march=native", "-fopenmp"])")) << prompt;
  EXPECT_FALSE(contains(prompt, "cuda_cflags\": [")) << prompt;
  EXPECT_TRUE(contains(prompt, "ISA avx512f")) << prompt;
  EXPECT_TRUE(contains(prompt, "1 workload, each timed")) << prompt;
  EXPECT_FALSE(contains(prompt, "workloads, each timed")) << prompt;
  // The draft shows the baseline's code, numbered by position, not by workspace id.
  EXPECT_TRUE(contains(prompt, "### Candidate 1")) << prompt;
  EXPECT_TRUE(contains(prompt, request.inspirations[0].solution.sources[0].content)) << prompt;
  EXPECT_FALSE(contains(prompt, "4711")) << prompt;
  const std::string system = build_prompt(load_prompt_templates(""), request).system;
  EXPECT_TRUE(contains(system, "host pointers")) << system;
}

TEST(PromptDevice, CudaDraftCarriesTheCudaFacts) {
  const SynthesisRequest request = draft(
      cuda_problem(), "cuda:0", kSource.string() + "/problems/cuda/rmsnorm_bf16/solutions/basic");
  const std::string prompt = user_message(request);
  EXPECT_TRUE(contains(prompt, "```cuda kernel.cu")) << prompt;
  EXPECT_TRUE(contains(prompt, R"({"cuda_cflags": ["-O3", "--use_fast_math", "-lineinfo"]})"))
      << prompt;
  EXPECT_FALSE(contains(prompt, R"({"cflags": ["-O3")")) << prompt;
  EXPECT_TRUE(contains(prompt, "1 workload, each timed")) << prompt;
  EXPECT_TRUE(contains(prompt, "### Candidate 1")) << prompt;
  const std::string system = build_prompt(load_prompt_templates(""), request).system;
  EXPECT_TRUE(contains(system, "device pointers")) << system;
}

TEST(PromptDevice, RepairShowsTheParentsLogOnce) {
  SynthesisRequest request =
      draft(cpu_problem(), "cpu", kSource.string() + "/problems/cpu/rmsnorm_f32/solutions/naive");
  request.move = SynthesisMove::Repair;
  request.parent = baseline(kSource.string() + "/problems/cpu/rmsnorm_f32/solutions/naive", 12);
  request.parent->status = EvalStatus::IncorrectNumerical;
  request.parent->log = "workload batch_size=7: output y: 7000 of 7000 elements off";
  request.recent_failures = {"llm program of explorer: INCORRECT_NUMERICAL: " + request.parent->log,
                             "llm program of explorer: COMPILE_ERROR: main.cpp:3: error: x"};
  const std::string prompt = user_message(request);
  std::size_t count = 0;
  for (std::size_t at = prompt.find("7000 of 7000"); at != std::string::npos;
       at = prompt.find("7000 of 7000", at + 1))
    ++count;
  EXPECT_EQ(count, 1u) << prompt;
  EXPECT_TRUE(contains(prompt, "main.cpp:3: error: x")) << prompt;
}

TEST(PromptDevice, CacheIdentityIgnoresMeasuredFiguresButNotCode) {
  const PromptTemplates templates = load_prompt_templates("");
  SynthesisRequest first =
      draft(cpu_problem(), "cpu", kSource.string() + "/problems/cpu/rmsnorm_f32/solutions/naive");
  first.move = SynthesisMove::Improve;
  first.parent = baseline(kSource.string() + "/problems/cpu/rmsnorm_f32/solutions/naive", 3);
  first.board = {"candidate 9 reached 1.40x at batch_size=7"};
  first.recent_failures = {"llm program: COMPILE_ERROR: took 1.2 s"};
  SynthesisRequest second = first;
  second.parent->candidate_id = 30;
  second.parent->results = "batch_size=7: 12.9 us, 0.97x";
  second.board = {"candidate 41 reached 1.38x at batch_size=7"};
  second.recent_failures = {"llm program: COMPILE_ERROR: took 1.3 s"};
  second.hardware = "cpu: 8 cores; ISA avx512f, avx2; L1d 32 KiB per core";
  EXPECT_EQ(cache_identity(templates, first), cache_identity(templates, second));
  EXPECT_NE(build_prompt(templates, first).messages[0].content,
            build_prompt(templates, second).messages[0].content);
  SynthesisRequest other_code = first;
  other_code.parent->solution.sources[0].content += "// 128\n";
  EXPECT_NE(cache_identity(templates, first), cache_identity(templates, other_code));
}

}  // namespace
}  // namespace kernelarc

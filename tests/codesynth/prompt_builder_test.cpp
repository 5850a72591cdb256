#include "codesynth/prompt_builder.h"

#include <gtest/gtest.h>

#include <string>

#include "../core/test_support.h"

namespace kernelarc {
namespace {

using testing::input_error_of;
using testing::TempDir;

const std::string kProblem = std::string(KERNELARC_SOURCE_DIR) + "/problems/cuda/rmsnorm_bf16";

const Problem& rmsnorm() {
  static const Problem problem = load_problem(kProblem);
  return problem;
}

CandidateContext basic_parent() {
  CandidateContext parent;
  parent.candidate_id = 7;
  parent.solution = load_solution(kProblem + "/solutions/basic");
  parent.status = EvalStatus::Passed;
  parent.results = "batch_size=16384: 81.2 us, 1.9x eager, 0.74 of SOL";
  parent.diagnosis = "memory-bound: 74% of the calibrated DRAM bandwidth at batch_size=16384";
  return parent;
}

SynthesisRequest improve_request() {
  SynthesisRequest request;
  request.problem = &rmsnorm();
  request.device = "cuda:0";
  request.hardware = "NVIDIA H200: 132 SMs, 4.0 TB/s copy bandwidth, 50 MiB L2";
  request.agent = "memory";
  request.strategy = "memory traffic: vector width, caching the row, fewer passes";
  request.move = SynthesisMove::Improve;
  request.parent = basic_parent();
  request.knowledge = {
      "Use 16-byte vector loads (uint4) for bf16 rows whose length is a "
      "multiple of 8."};
  request.board = {"a warp per row beats a block per row below 1000 rows"};
  request.recent_failures = {
      "candidate 5 (COMPILE_ERROR):\nkernel.cu(12): error: identifier "
      "\"kVec\" is undefined\n1 error detected"};
  return request;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(PromptBuilder, ImprovePromptHoldsEverySectionAndTheParentCode) {
  const PromptTemplates templates = load_prompt_templates("");
  const SynthesisRequest request = improve_request();
  const ChatRequest chat = build_prompt(templates, request);
  ASSERT_EQ(chat.messages.size(), 1u);
  EXPECT_EQ(chat.messages[0].role, "user");
  const std::string& system = chat.system;
  const std::string& user = chat.messages[0].content;

  EXPECT_TRUE(contains(system, "int ka_run(const ka_tensor* inputs")) << system;
  EXPECT_TRUE(contains(system, "poisoned")) << system;
  EXPECT_TRUE(contains(system, "0.8 x the speed-of-light")) << system;
  EXPECT_TRUE(contains(system, "launch every kernel on it")) << system;

  EXPECT_TRUE(contains(user, "# Task: make the parent faster")) << user;
  EXPECT_TRUE(contains(user, "Name: rmsnorm_bf16_h4096 (op_type rmsnorm)")) << user;
  EXPECT_TRUE(contains(user, "- hidden_size: const 4096: row length")) << user;
  EXPECT_TRUE(contains(user, "- hidden_states: bfloat16 [batch_size, hidden_size]")) << user;
  EXPECT_TRUE(contains(user, "- output: bfloat16 [batch_size, hidden_size]")) << user;
  EXPECT_TRUE(contains(user, "Tolerance (every workload): max_atol 0.01, max_rtol 0.01")) << user;
  EXPECT_TRUE(contains(user, "torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)")) << user;
  EXPECT_TRUE(contains(user, "7 workloads")) << user;
  EXPECT_TRUE(contains(user, "- batch_size=1\n- batch_size=7\n")) << user;
  EXPECT_TRUE(contains(user, request.hardware)) << user;
  EXPECT_TRUE(contains(user, "Focus: " + request.strategy)) << user;
  EXPECT_TRUE(contains(user, "\"entry_point\": \"kernel.cu::ka_run\"")) << user;
  EXPECT_FALSE(contains(user, "\"sources\"")) << user;
  EXPECT_TRUE(contains(user, "```cuda kernel.cu\n" + request.parent->solution.sources[0].content))
      << user;
  EXPECT_TRUE(contains(user, request.parent->results)) << user;
  EXPECT_TRUE(contains(user, request.parent->diagnosis)) << user;
  EXPECT_TRUE(contains(user, "1. " + request.knowledge[0])) << user;
  EXPECT_TRUE(contains(user, "- " + request.board[0])) << user;
  EXPECT_TRUE(contains(user,
                       "1. candidate 5 (COMPILE_ERROR):\n```text\nkernel.cu(12): error: "
                       "identifier \"kVec\" is undefined\n1 error detected\n```"))
      << user;
  EXPECT_TRUE(contains(user, "The entry file is `kernel.cu`")) << user;
  EXPECT_TRUE(contains(user, "<<<<<<< SEARCH kernel.cu")) << user;
  EXPECT_TRUE(contains(user, "## Other candidates, for ideas\n\n(none)\n")) << user;
  EXPECT_FALSE(contains(system + user, "{{")) << "a placeholder was left unfilled";
}

TEST(PromptBuilder, SameRequestGivesByteIdenticalPrompts) {
  const SynthesisRequest request = improve_request();
  const ChatRequest first = build_prompt(load_prompt_templates(""), request);
  const ChatRequest second = build_prompt(load_prompt_templates(""), improve_request());
  EXPECT_EQ(first.system, second.system);
  ASSERT_EQ(first.messages.size(), second.messages.size());
  EXPECT_EQ(first.messages[0].content, second.messages[0].content);
}

TEST(PromptBuilder, DraftShowsEmptySectionsAsNone) {
  SynthesisRequest request;
  request.problem = &rmsnorm();
  request.device = "cuda:0";
  const ChatRequest chat = build_prompt(load_prompt_templates(""), request);
  const std::string& user = chat.messages[0].content;
  EXPECT_TRUE(contains(user, "# Task: write a first solution")) << user;
  EXPECT_TRUE(contains(user, "## Knowledge\n\n(none)\n")) << user;
  EXPECT_TRUE(contains(user, "## Your strategy\n\n(none)\n")) << user;
  EXPECT_TRUE(contains(user, "Device: cuda:0\n(no calibrated facts)")) << user;
  EXPECT_TRUE(contains(user, "The entry file is `kernel.cu`")) << user;
}

TEST(PromptBuilder, RepairShowsTheParentLogTrimmed) {
  SynthesisRequest request = improve_request();
  request.move = SynthesisMove::Repair;
  request.parent->status = EvalStatus::CompileError;
  std::string log = "nvcc -shared -Xcompiler -fPIC -O3 src/kernel.cu -o lib.so\n";
  for (int line = 0; line < 100; ++line)
    log += "kernel.cu(" + std::to_string(line) + "): error: expected a \";\"\n";
  request.parent->log = log;
  const std::string user = build_prompt(load_prompt_templates(""), request).messages[0].content;
  EXPECT_TRUE(contains(user, "# Task: fix the parent")) << user;
  EXPECT_TRUE(contains(user, "Status: COMPILE_ERROR")) << user;
  EXPECT_TRUE(contains(user, "kernel.cu(0): error")) << user;
  EXPECT_TRUE(contains(user, "kernel.cu(39): error")) << user;
  EXPECT_FALSE(contains(user, "kernel.cu(40): error")) << user;
  EXPECT_FALSE(contains(user, "nvcc -shared")) << user;
  EXPECT_TRUE(contains(user, "[log trimmed: kept lines 2 to 41 of 101]")) << user;
}

TEST(PromptBuilder, ParentWithLaunchSpecIsDescribedAsAnNvrtcKernel) {
  SynthesisRequest request = improve_request();
  request.parent->solution.ext["launch"] = {{"grid", {"batch_size"}}, {"block", {256}}};
  const ChatRequest chat = build_prompt(load_prompt_templates(""), request);
  EXPECT_TRUE(contains(chat.system, "NVRTC compiles the entry file")) << chat.system;
  EXPECT_TRUE(contains(chat.messages[0].content, "\"launch\"")) << chat.messages[0].content;
}

TEST(PromptBuilder, CodeHoldingAFenceGetsALongerFence) {
  SynthesisRequest request = improve_request();
  request.parent->solution.sources[0].content = "// ```\n```\nint x;\n";
  const std::string user = build_prompt(load_prompt_templates(""), request).messages[0].content;
  EXPECT_TRUE(contains(user, "````cuda kernel.cu\n// ```\n```\nint x;\n````")) << user;
}

TEST(PromptBuilder, OverrideFileReplacesItsDefaultOnly) {
  TempDir dir;
  dir.write("draft.md", "Custom draft for {{entry_file}}; braces {{0}} stay.\n{{workloads}}\n");
  const PromptTemplates defaults = load_prompt_templates("");
  const PromptTemplates templates = load_prompt_templates(dir.path());
  EXPECT_EQ(templates.system, defaults.system);
  EXPECT_EQ(templates.improve, defaults.improve);
  SynthesisRequest request;
  request.problem = &rmsnorm();
  request.device = "cuda:0";
  const std::string user = build_prompt(templates, request).messages[0].content;
  EXPECT_TRUE(user.starts_with("Custom draft for kernel.cu; braces {{0}} stay.\n7 workloads"))
      << user;
}

TEST(PromptBuilder, UnknownPlaceholderNamesTheFileAndThePlaceholder) {
  TempDir dir;
  const auto file = dir.write("improve.md", "Parent:\n{{parnet_code}}\n");
  const std::string message = input_error_of([&] { load_prompt_templates(dir.path()); });
  EXPECT_TRUE(contains(message, file.string())) << message;
  EXPECT_TRUE(contains(message, "unknown placeholder {{parnet_code}}")) << message;
  EXPECT_TRUE(contains(message, "{{parent_code}}")) << message;
}

TEST(PromptBuilder, FragmentMayNotNameItself) {
  TempDir dir;
  dir.write("guard_rules.md", "{{guard_rules}}\n");
  const std::string message = input_error_of([&] { load_prompt_templates(dir.path()); });
  EXPECT_TRUE(contains(message, "guard_rules.md: unknown placeholder {{guard_rules}}")) << message;
}

TEST(PromptBuilder, MisnamedOverrideFileIsAnError) {
  TempDir dir;
  dir.write("sytem.md", "You are...\n");
  const std::string message = input_error_of([&] { load_prompt_templates(dir.path()); });
  EXPECT_TRUE(contains(message, "sytem.md: not a prompt file")) << message;
  EXPECT_TRUE(contains(input_error_of([&] { load_prompt_templates(dir / "missing"); }),
                       "expected a directory of prompt files"));
}

TEST(PromptBuilder, TrimFailureLogKeepsShortLogsAndCapsCharacters) {
  EXPECT_EQ(trim_failure_log("INCORRECT_NUMERICAL: 3 of 4096 elements differ\n"),
            "INCORRECT_NUMERICAL: 3 of 4096 elements differ\n");
  std::string wide;
  for (int line = 0; line < 30; ++line)
    wide += "main.cpp:1: error: " + std::string(300, 'x') + "\n";
  const std::string trimmed = trim_failure_log(wide);
  EXPECT_LE(trimmed.size(), 4000u + 60u);
  EXPECT_TRUE(trimmed.ends_with("[log trimmed: kept lines 1 to 12 of 30]")) << trimmed;
  const std::string one_line = trim_failure_log("error: " + std::string(9000, 'y'));
  EXPECT_TRUE(one_line.ends_with("[log trimmed: kept lines 1 to 1 of 1]")) << one_line.size();
  EXPECT_LE(one_line.size(), 4000u + 60u);
}

}  // namespace
}  // namespace kernelarc

// `kernelarc import flashinfer`: a FlashInfer-Bench dataset (definitions/, workloads/ of
// workload traces, solutions/) becomes problem directories that load, one definition at a time.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "app/flashinfer_import.h"
#include "core/error.h"
#include "core/problem.h"
#include "core/safetensors.h"
#include "core/test_support.h"

namespace kernelarc {
namespace {

namespace fs = std::filesystem;
using testing::input_error_of;
using testing::TempDir;

void write(const fs::path& file, const std::string& content) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << content;
}

std::string gemm_definition(const std::string& name) {
  return R"({"name": ")" + name + R"(", "op_type": "gemm", "tags": ["status:verified"],
    "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": 8},
             "K": {"type": "const", "value": 4}},
    "inputs": {"A": {"shape": ["M", "K"], "dtype": "float16"},
               "B": {"shape": ["N", "K"], "dtype": "float16"}},
    "outputs": {"C": {"shape": ["M", "N"], "dtype": "float16"}},
    "reference": "import torch\n\ndef run(A, B):\n    return torch.matmul(A, B.T)\n"})";
}

std::string workload_trace(const std::string& definition, const std::string& uuid, int m,
                           const std::string& a_input = R"({"type": "random"})") {
  return R"({"definition": ")" + definition + R"(", "solution": null, "workload": {"uuid": ")" +
         uuid + R"(", "axes": {"M": )" + std::to_string(m) + R"(}, "inputs": {"A": )" + a_input +
         R"(, "B": {"type": "random"}}}, "evaluation": null})";
}

TEST(FlashInferImport, EachDefinitionWithWorkloadsBecomesAProblemThatLoads) {
  TempDir dataset;
  TempDir out;
  write(dataset / "definitions/gemm/gemm_a.json", gemm_definition("gemm_a"));
  write(dataset / "definitions/gemm/gemm_b.json", gemm_definition("gemm_b"));
  write(dataset / "workloads/gemm/gemm_a.jsonl",
        workload_trace("gemm_a", "u1", 16) + "\n\n" + workload_trace("gemm_a", "u2", 32) + "\n");
  write(dataset / "workloads/gemm/gemm_b.jsonl", workload_trace("gemm_b", "u3", 8) + "\n");
  write(dataset / "solutions/gemm/gemm_a/triton.json", R"({"name": "x"})");

  const TraceSetImport result = import_trace_set(dataset.path(), out.path());
  ASSERT_EQ(result.definitions.size(), 2u);
  EXPECT_EQ(result.solutions, 1);
  EXPECT_TRUE(result.stray_workloads.empty());
  for (const DefinitionImport& definition : result.definitions) {
    ASSERT_TRUE(definition.problem_dir) << definition.error;
  }
  const Problem a = load_problem(out / "gemm_a");
  EXPECT_EQ(a.definition.name, "gemm_a");
  ASSERT_EQ(a.workloads.size(), 2u);
  EXPECT_EQ(a.workloads[1].uuid, "u2");
  EXPECT_EQ(result.definitions[0].workloads, 2);
  EXPECT_EQ(load_problem(out / "gemm_b").workloads.size(), 1u);
}

TEST(FlashInferImport, ABlobPathIsResolvedAgainstTheDatasetRoot) {
  TempDir dataset;
  TempDir out;
  HostTensor a(DType::Float16, {16, 4});
  fs::create_directories(dataset / "blob/workloads/gemm_a");
  write_safetensors(dataset / "blob/workloads/gemm_a/a.safetensors", {{"A", a}});
  write(dataset / "definitions/gemm_a.json", gemm_definition("gemm_a"));
  write(dataset / "workloads/gemm_a.jsonl",
        workload_trace("gemm_a", "u1", 16,
                       R"({"type": "safetensors", "path": "blob/workloads/gemm_a/a.safetensors", )"
                       R"("tensor_key": "A"})") +
            "\n");

  const TraceSetImport result = import_trace_set(dataset.path(), out.path());
  ASSERT_TRUE(result.definitions.at(0).problem_dir) << result.definitions.at(0).error;
  const Problem problem = load_problem(out / "gemm_a");
  const WorkloadInput& input = problem.workloads.at(0).inputs.at("A");
  EXPECT_EQ(fs::path(input.path), fs::absolute(dataset / "blob/workloads/gemm_a/a.safetensors"));
  EXPECT_EQ(read_safetensors_tensor(problem.dir / input.path, "A").shape,
            (std::vector<int64_t>{16, 4}));
}

TEST(FlashInferImport, ABadDefinitionFailsAloneAndSaysWhy) {
  TempDir dataset;
  TempDir out;
  write(dataset / "definitions/a_good.json", gemm_definition("good"));
  write(dataset / "definitions/b_broken.json", R"({"name": "broken", "axes": {}})");
  write(dataset / "definitions/c_no_workloads.json", gemm_definition("lonely"));
  write(dataset / "definitions/d_twice.json", gemm_definition("good"));
  write(dataset / "definitions/e_bad_axis.json", gemm_definition("bad_axis"));
  write(dataset / "workloads/all.jsonl", workload_trace("good", "u1", 4) + "\n" +
                                             workload_trace("bad_axis", "u2", -3) + "\n" +
                                             workload_trace("nobody", "u3", 4) + "\nnot json\n");

  const TraceSetImport result = import_trace_set(dataset.path(), out.path());
  ASSERT_EQ(result.definitions.size(), 5u);
  EXPECT_TRUE(result.definitions[0].problem_dir);
  EXPECT_FALSE(result.definitions[1].problem_dir);
  EXPECT_NE(result.definitions[1].error.find("b_broken.json"), std::string::npos);
  EXPECT_NE(result.definitions[2].error.find("no workload trace"), std::string::npos);
  EXPECT_NE(result.definitions[3].error.find("earlier definition"), std::string::npos);
  // A workload the loader refuses: the error names the dataset's files, and no half problem
  // directory is left behind.
  EXPECT_FALSE(result.definitions[4].problem_dir);
  EXPECT_NE(result.definitions[4].error.find("all.jsonl"), std::string::npos);
  EXPECT_FALSE(fs::exists(out / "bad_axis"));
  ASSERT_EQ(result.stray_workloads.size(), 2u);
  EXPECT_NE(result.stray_workloads[0].find("all.jsonl:4"), std::string::npos);
  EXPECT_NE(result.stray_workloads[1].find("\"nobody\""), std::string::npos);
}

TEST(FlashInferImport, NotADatasetIsAnInputErrorAndLoadProblemPointsToTheImport) {
  TempDir dataset;
  TempDir out;
  EXPECT_NE(input_error_of([&] {
              import_trace_set(dataset.path(), out.path());
            }).find("expected a FlashInfer-Bench dataset"),
            std::string::npos);
  fs::create_directories(dataset / "definitions");
  EXPECT_NE(input_error_of([&] { load_problem(dataset.path()); }).find("import flashinfer"),
            std::string::npos);
}

}  // namespace
}  // namespace kernelarc

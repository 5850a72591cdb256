// Problems as users write them, with no kernelarc annotation: `kernelarc bench` over a suite of a
// malformed definition, a Bessel function (i0) nothing serves and an unannotated RMSNorm written
// the way SOL-ExecBench writes it gives a row each (failed naming the field, not served naming the
// op, served with a speedup), and times no baseline for the unserved one; `kernelarc
// explain` shows the traced graph of an unannotated softmax, its family and the templates that
// bind. (Definitions are ordered JSON: run()'s parameters follow the inputs' order.)
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_test_support.h"
#include "source_dir.h"

namespace {

namespace fs = std::filesystem;

/// The SOL-ExecBench form of an RMSNorm: no "kernelarc" key, the reference computes in float32.
const char* kRmsNormReference = R"(import torch


@torch.no_grad()
def run(hidden_states, weight):
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + 1e-6)
    return weight * hidden_states.to(input_dtype)
)";

nlohmann::ordered_json row_definition(const std::string& name, const std::string& dtype,
                                      const std::string& reference) {
  return {
      {"name", name},
      {"op_type", "rmsnorm"},
      {"axes",
       {{"batch_size", {{"type", "var"}}}, {"hidden_size", {{"type", "const"}, {"value", 512}}}}},
      {"inputs",
       {{"hidden_states", {{"shape", {"batch_size", "hidden_size"}}, {"dtype", dtype}}},
        {"weight", {{"shape", {"hidden_size"}}, {"dtype", dtype}}}}},
      {"outputs", {{"output", {{"shape", {"batch_size", "hidden_size"}}, {"dtype", dtype}}}}},
      {"reference", reference}};
}

class RecognitionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kernelarc-recognition-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_problem(const fs::path& dir, const nlohmann::ordered_json& definition,
                     const nlohmann::ordered_json& workload) {
    fs::create_directories(dir);
    std::ofstream(dir / "definition.json") << definition.dump(2);
    std::ofstream(dir / "workload.jsonl") << workload.dump() << '\n';
  }

  fs::path dir_;
};

TEST_F(RecognitionCli, BenchGivesEveryProblemItsRowAndTimesNoBaselineForAnUnservedOne) {
  const fs::path suite = dir_ / "suite";
  const nlohmann::ordered_json rms_workload = {
      {"uuid", "rms-0"},
      {"axes", {{"batch_size", 4}}},
      {"inputs", {{"hidden_states", {{"type", "random"}}}, {"weight", {{"type", "random"}}}}}};
  write_problem(suite / "a_malformed", row_definition("malformed", "f32", kRmsNormReference),
                rms_workload);
  write_problem(suite / "b_rmsnorm", row_definition("rmsnorm_sol", "float32", kRmsNormReference),
                rms_workload);
  const nlohmann::ordered_json bessel = {
      {"name", "bessel"},
      {"axes",
       {{"batch_size", {{"type", "var"}}},
        {"channels", {{"type", "const"}, {"value", 4}}},
        {"size", {{"type", "const"}, {"value", 8}}},
        {"kernel", {{"type", "const"}, {"value", 3}}},
        {"out_size", {{"type", "const"}, {"value", 6}}}}},
      {"inputs",
       {{"x", {{"shape", {"batch_size", "channels", "size", "size"}}, {"dtype", "float32"}}},
        {"w", {{"shape", {"channels", "channels", "kernel", "kernel"}}, {"dtype", "float32"}}}}},
      {"outputs",
       {{"output",
         {{"shape", {"batch_size", "channels", "out_size", "out_size"}}, {"dtype", "float32"}}}}},
      {"reference",
       "import torch\n\n\ndef run(x, w):\n"
       "    return torch.special.i0(x[:, :, 1:7, 1:7])\n"}};
  write_problem(suite / "c_bessel", bessel,
                {{"uuid", "bessel-0"},
                 {"axes", {{"batch_size", 2}}},
                 {"inputs", {{"x", {{"type", "random"}}}, {"w", {{"type", "random"}}}}}});

  const auto result = run("bench " + suite.string() +
                          " --budget 2 --rounds 1 --trials 1 --warmup 1 --iterations 5 --plain"
                          " --workspace " +
                          (dir_ / "ws").string() + " --out " + (dir_ / "out").string());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // Every problem is read before any is measured.
  const auto unreadable = result.output.find("malformed: cannot be read");
  ASSERT_NE(unreadable, std::string::npos) << result.output;
  EXPECT_LT(unreadable, result.output.find("side-by-side round")) << result.output;
  EXPECT_EQ(result.output.find("bessel: side-by-side round"), std::string::npos) << result.output;

  std::ifstream file(dir_ / "out" / "bench.json");
  const auto json = nlohmann::ordered_json::parse(file);
  ASSERT_EQ(json["problems"].size(), 3u) << json.dump(2);
  const auto& malformed = json["problems"][0];
  EXPECT_EQ(malformed["status"], "failed");
  EXPECT_NE(malformed["note"].get<std::string>().find("inputs.hidden_states.dtype"),
            std::string::npos)
      << malformed.dump();

  const auto& rmsnorm = json["problems"][1];
  EXPECT_EQ(rmsnorm["name"], "rmsnorm_sol");
  EXPECT_EQ(rmsnorm["op_family"], "rmsnorm") << rmsnorm.dump();
  EXPECT_NE(rmsnorm["recognition"].get<std::string>().find("matched"), std::string::npos);
  EXPECT_TRUE(rmsnorm["speedup"]["value"].is_number()) << rmsnorm.dump();
  EXPECT_NE(rmsnorm["status"], "failed");

  const auto& unserved = json["problems"][2];
  EXPECT_EQ(unserved["name"], "bessel");
  EXPECT_EQ(unserved["status"], "not served");
  EXPECT_NE(unserved["note"].get<std::string>().find("aten.i0"), std::string::npos)
      << unserved.dump();
  EXPECT_TRUE(unserved["workloads"].empty()) << unserved.dump();  // no baseline timed
  EXPECT_EQ(json["summary"]["not_served"], 1);
  EXPECT_EQ(json["summary"]["failed"], 1);
}

TEST_F(RecognitionCli, ExplainShowsTheGraphTheFamilyAndTheTemplatesThatBind) {
  nlohmann::ordered_json definition;
  std::ifstream(kSource / "problems/cpu/softmax_f32/definition.json") >> definition;
  definition.erase("kernelarc");
  std::ifstream workloads(kSource / "problems/cpu/softmax_f32/workload.jsonl");
  std::string first;
  std::getline(workloads, first);
  write_problem(dir_ / "softmax", definition, nlohmann::ordered_json::parse(first));

  const std::string args =
      "explain " + (dir_ / "softmax").string() + " --workspace " + (dir_ / "ws").string();
  const auto result = run(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("aten._softmax"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("recognition: matched"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("family: softmax"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("rowreduce_cpu  yes"), std::string::npos) << result.output;

  const auto json_result = run(args + " --json");
  ASSERT_EQ(json_result.exit_code, 0) << json_result.output;
  const auto json = nlohmann::ordered_json::parse(json_result.output);
  EXPECT_EQ(json["recognition"]["source"], "matched");
  EXPECT_EQ(json["recognition"]["family"], "softmax");
  EXPECT_EQ(json["graph"]["version"], 1);
  bool binds = false;
  for (const auto& verdict : json["templates"]) binds = binds || verdict["binds"].get<bool>();
  EXPECT_TRUE(binds) << json["templates"].dump();
}

// A problem that only CUDA templates serve (NVFP4 keys and values, standard fields only): the
// listing of every target recognizes it for any target, a CPU listing refuses it.
TEST_F(RecognitionCli, TemplatesListRecognizesForTheTargetsItLists) {
  const fs::path source = kSource / "problems/cuda/gqa_decode_nvfp4kv_q32_kv8_d128";
  nlohmann::ordered_json definition;
  std::ifstream(source / "definition.json") >> definition;
  definition.erase("kernelarc");
  definition.erase("custom_inputs_entrypoint");
  std::ifstream workloads(source / "workload.jsonl");
  std::string first;
  std::getline(workloads, first);
  nlohmann::ordered_json workload = nlohmann::ordered_json::parse(first);
  for (auto& [name, input] : workload["inputs"].items()) input = {{"type", "random"}};
  write_problem(dir_ / "nvfp4", definition, workload);

  const std::string args = "templates list --problem " + (dir_ / "nvfp4").string() +
                           " --workspace " + (dir_ / "ws").string();
  const auto every = run(args);
  ASSERT_EQ(every.exit_code, 0) << every.output;
  EXPECT_NE(every.output.find("op family \"attention_nvfp4\""), std::string::npos) << every.output;
  EXPECT_NE(every.output.find("attention_decode_nvfp4"), std::string::npos) << every.output;
  const auto cpu = run(args + " --target cpu");
  EXPECT_EQ(cpu.exit_code, 1) << cpu.output;
  EXPECT_NE(cpu.output.find("not served"), std::string::npos) << cpu.output;
}

}  // namespace

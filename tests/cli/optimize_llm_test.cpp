// `kernelarc optimize --synth llm` end to end against model servers the test starts itself
// (cpp-httplib on 127.0.0.1, speaking the OpenAI and the Anthropic wire formats): scripted good
// answers are measured and can win; a 429 then a success, malformed and truncated answers, 500s,
// timeouts and a dead server each end as a candidate failed with its reason, and the run goes
// on; the API key never reaches the workspace or the output.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "backend/calibrate.h"
#include "cli/cli_test_support.h"
#include "llm/fake_model_server.h"
#include "source_dir.h"
#include "store/workspace.h"

namespace {

namespace fs = std::filesystem;
using kernelarc::testing::anthropic_answer;
using kernelarc::testing::DeadPort;
using kernelarc::testing::FakeModelServer;
using kernelarc::testing::openai_answer;
using kernelarc::testing::ScriptedReply;
constexpr const char* kKey = "sk-test-7f3a9c1e-never-stored";

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

/// The bundled optimized CPU RMSNorm, as a model would answer with it.
std::string optimized_answer() {
  return "Vectorize the sum of squares and parallelize over rows.\n\n```cpp main.cpp\n" +
         read_file(kSource / "problems/cpu/rmsnorm_f32/solutions/optimized/main.cpp") +
         "```\n\n```json solution\n{\"cflags\": [\"-O3\", \"-march=native\", \"-fopenmp\"], "
         "\"ld_flags\": [\"-fopenmp\"]}\n```\n";
}

class OptimizeLlm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kernelarc-llm-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    setenv("KA_TEST_LLM_KEY", kKey, 1);  // the kernelarc child inherits it
    seed_calibration();
  }
  /// A fixed calibration in the workspace before the first run: without one the guard measures
  /// the machine during the first run, whose prompts then quote other hardware facts than a
  /// replay's, and the replay misses the cache. Its bandwidth is far above any real one, so the
  /// speed-of-light floor is never in the way of these tests.
  void seed_calibration() {
    kernelarc::Calibration calibration;
    calibration.device = "cpu";
    calibration.description = "seeded by the test";
    calibration.measured_at = "2026-01-01T00:00:00Z";
    calibration.cores = 2;
    calibration.copy_bandwidth_gbs = 1000;
    calibration.fp32_fma_tflops = 10;
    calibration.l2_bytes = 1 << 20;
    calibration.llc_bytes = 32 << 20;
    kernelarc::save_calibration(dir_ / "ws", calibration);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A one-model configuration with short timeouts and backoffs.
  fs::path config(const std::string& provider, const std::string& endpoint) {
    const nlohmann::json json = {{"models",
                                  {{{"provider", provider},
                                    {"endpoint", endpoint + (provider == "openai" ? "/v1" : "")},
                                    {"model", "test-model"},
                                    {"api_key_env", "KA_TEST_LLM_KEY"},
                                    {"timeout_s", 1.0},
                                    {"retries", 2},
                                    {"backoff_s", 0.01},
                                    {"price_input_per_mtok", 2.0},
                                    {"price_output_per_mtok", 8.0}}}},
                                 {"repair_rounds", 1}};
    const fs::path path = dir_ / "llm.json";
    std::ofstream(path) << json.dump(2);
    return path;
  }

  CommandResult optimize(const fs::path& llm_config, int budget, const std::string& extra = "") {
    return run("optimize " + (kSource / "problems/cpu/rmsnorm_f32").string() +
               " --synth llm --llm-config " + llm_config.string() + " --agents 1 --budget " +
               std::to_string(budget) + " --workspace " + (dir_ / "ws").string() +
               " --workloads 9f5092c6 --trials 1 --warmup 1 --iterations 5 --timing-budget 0.1"
               " --final-top 2 --final-rounds 1 --no-skills --plain " +
               extra);
  }

  /// Each code candidate of the last run, in order: its solution's name, or "failed: <reason>"
  /// when the synthesizer gave none.
  std::vector<std::string> programs() {
    kernelarc::Workspace workspace(dir_ / "ws");
    std::vector<std::string> names;
    const auto run = workspace.database().list_runs().back();
    for (const auto& candidate : workspace.database().candidates_of(run.id)) {
      const auto synthesis = workspace.database().synthesis_of(candidate.id);
      if (!synthesis) continue;
      const auto json = nlohmann::json::parse(workspace.objects().get(candidate.solution_key));
      names.push_back(json.is_null() ? "failed: " + synthesis->failure
                                     : json["name"].get<std::string>());
    }
    return names;
  }

  /// The stored solutions of every run (solution.json objects), as text.
  std::vector<std::string> stored_solutions() {
    kernelarc::Workspace workspace(dir_ / "ws");
    std::vector<std::string> texts;
    for (const auto& run : workspace.database().list_runs())
      for (const auto& candidate : workspace.database().candidates_of(run.id))
        texts.push_back(workspace.objects().get(candidate.solution_key));
    return texts;
  }

  /// The failure of every code candidate of the run, in order ("" for one that got a program).
  std::vector<std::string> failures() {
    kernelarc::Workspace workspace(dir_ / "ws");
    std::vector<std::string> reasons;
    const auto run = workspace.database().list_runs().back();
    for (const auto& candidate : workspace.database().candidates_of(run.id))
      if (const auto synthesis = workspace.database().synthesis_of(candidate.id))
        reasons.push_back(synthesis->failure);
    return reasons;
  }

  /// Whether any file under the workspace holds the key.
  bool workspace_holds_key() {
    for (const auto& entry : fs::recursive_directory_iterator(dir_ / "ws"))
      if (entry.is_regular_file() && read_file(entry.path()).find(kKey) != std::string::npos)
        return true;
    return false;
  }

  fs::path dir_;
};

/// The server must have been sent the key, and only in its own header.
void expect_key_sent(const FakeModelServer& server, const std::string& header,
                     const std::string& value) {
  const auto requests = server.requests();
  ASSERT_FALSE(requests.empty());
  for (const auto& request : requests) {
    EXPECT_EQ(request.header(header), value);
    EXPECT_EQ(request.body.find(kKey), std::string::npos);
  }
}

TEST_F(OptimizeLlm, EveryServerFailureIsARecordedReasonAndAGoodAnswerWins) {
  FakeModelServer server;
  const std::string good = openai_answer(optimized_answer(), "stop", 1500, 400);
  const ScriptedReply slow{200, good, {}, 1.5};  // past the 1 s timeout
  const ScriptedReply overloaded{500, R"({"error": {"message": "overloaded"}})", {}, 0};
  server.script({
      {429, R"({"error": {"message": "slow down"}})", {{"Retry-After", "0"}}, 0},
      {200, good, {}, 0},  // the retry: a program
      {200, "this is not JSON", {}, 0},
      {200, openai_answer("```cpp main.cpp\nint ka_run(", "length"), {}, 0},
      overloaded,
      overloaded,
      overloaded,  // the retries spent
      slow,
      slow,
      slow,
      {200, openai_answer("I would rather not write code today."), {}, 0},
      {200, good, {}, 0},
      {200, good, {}, 0},
  });
  // One request at a time: the server's script answers requests in the order they arrive.
  const auto result = optimize(config("openai", server.endpoint()), 8, "--synthesis-parallel 1");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_key_sent(server, "Authorization", std::string("Bearer ") + kKey);

  const auto reasons = failures();
  ASSERT_EQ(reasons.size(), 8u) << result.output;
  EXPECT_EQ(reasons[0], "") << "a 429 is retried";
  auto expect_reason = [&](std::size_t i, const std::string& part) {
    EXPECT_NE(reasons[i].find(part), std::string::npos) << i << ": " << reasons[i];
  };
  expect_reason(1, "JSON");
  expect_reason(2, "max_tokens");
  expect_reason(3, "HTTP 500");
  expect_reason(4, "imeout");
  expect_reason(5, "no code block");
  EXPECT_EQ(reasons[6], "");
  EXPECT_EQ(reasons[7], "");

  EXPECT_NE(result.output.find("(llm program"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("found by explore)"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("code: 8 asked"), std::string::npos) << result.output;
  EXPECT_EQ(result.output.find(kKey), std::string::npos);
  EXPECT_FALSE(workspace_holds_key());
}

TEST_F(OptimizeLlm, AnthropicMessagesWorkToo) {
  FakeModelServer server;
  const std::string good = anthropic_answer({optimized_answer()});
  server.script({{200, good, {}, 0}, {200, good, {}, 0}});
  const auto result = optimize(config("anthropic", server.endpoint()), 2);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_key_sent(server, "x-api-key", kKey);
  EXPECT_EQ(failures(), (std::vector<std::string>{"", ""}));
  EXPECT_NE(result.output.find("llm program"), std::string::npos) << result.output;
}

TEST_F(OptimizeLlm, ADeadServerFailsEveryCandidateAndTheRunEndsCleanly) {
  const DeadPort dead;
  const auto result = optimize(config("openai", dead.endpoint()), 3);
  EXPECT_EQ(result.exit_code, 1) << result.output;  // no candidate passed
  EXPECT_NE(result.output.find("no candidate passed"), std::string::npos) << result.output;
  const auto reasons = failures();
  ASSERT_EQ(reasons.size(), 3u);
  for (const std::string& reason : reasons)
    EXPECT_NE(reason.find("onnect"), std::string::npos) << reason;
}

// Issue 25, item 1: the flag that ran a shell on the host. It is refused by name, the shell never
// runs, and no stored solution holds it; the run goes on to the next answer.
TEST_F(OptimizeLlm, AWrapperFlagIsRefusedNeverRunAndNeverStored) {
  FakeModelServer server;
  const fs::path marker = dir_ / "wrapper-ran";
  const std::string code =
      "```cpp main.cpp\n" +
      read_file(kSource / "problems/cpu/rmsnorm_f32/solutions/optimized/main.cpp") + "```\n";
  const nlohmann::json flags = {
      {"cflags",
       {"-O3", "-wrapper", "/bin/sh,-c,touch " + marker.string() + "; exec \"$0\" \"$@\""}}};
  server.script(
      {{200, openai_answer(code + "```json solution\n" + flags.dump() + "\n```\n"), {}, 0},
       {200, openai_answer(optimized_answer()), {}, 0}});
  const auto result = optimize(config("openai", server.endpoint()), 2);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_FALSE(fs::exists(marker));
  const auto reasons = failures();
  // The two requests are out together: either may get the refused answer.
  ASSERT_EQ(reasons.size(), 2u);
  const bool first_refused = reasons[0] != "";
  EXPECT_NE(reasons[first_refused ? 0 : 1].find("flag \"-wrapper\" is not allowed"),
            std::string::npos)
      << reasons[0] << " | " << reasons[1];
  EXPECT_EQ(reasons[first_refused ? 1 : 0], "");
  for (const std::string& solution : stored_solutions())
    EXPECT_EQ(solution.find("-wrapper"), std::string::npos) << solution;
}

/// A kernel that reports the LLM_AUTH variable as its error, or "LLM_AUTH unset".
std::string key_reading_answer() {
  return "```cpp main.cpp\n#include <kernelarc/abi.h>\n#include <cstdlib>\n"
         "static const char* seen = \"LLM_AUTH unset\";\n"
         "extern \"C\" const char* ka_last_error(void) { return seen; }\n"
         "extern \"C\" int ka_run(const ka_tensor*, int, ka_tensor*, int, void*, void*, size_t) {\n"
         "  if (const char* key = std::getenv(\"LLM_AUTH\")) seen = key;\n  return 1;\n}\n```\n";
}

// Issue 25, item 3: the key in a variable with an innocent name, read from inside a kernel. The
// worker's environment is an allowlist, so the kernel sees no such variable, and the key reaches
// neither the workspace nor the output.
TEST_F(OptimizeLlm, AKeyInAnInnocentNamedVariableNeverReachesAKernel) {
  FakeModelServer server;
  setenv("LLM_AUTH", kKey, 1);
  nlohmann::json json = nlohmann::json::parse(read_file(config("openai", server.endpoint())));
  json["models"][0]["api_key_env"] = "LLM_AUTH";
  std::ofstream(dir_ / "llm.json") << json.dump(2);
  server.script({{200, openai_answer(key_reading_answer()), {}, 0}});
  const auto result = optimize(dir_ / "llm.json", 1);
  unsetenv("LLM_AUTH");
  expect_key_sent(server, "Authorization", std::string("Bearer ") + kKey);
  EXPECT_EQ(result.output.find(kKey), std::string::npos) << result.output;
  EXPECT_FALSE(workspace_holds_key());
  kernelarc::Workspace workspace(dir_ / "ws");
  bool saw_unset = false;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "ws"))
    if (entry.is_regular_file() &&
        read_file(entry.path()).find("LLM_AUTH unset") != std::string::npos)
      saw_unset = true;
  EXPECT_TRUE(saw_unset) << "the kernel ran and reported the variable missing\n" << result.output;
}

// Issue 25, item 5: a missing key variable stops the run before anything is asked or spent.
TEST_F(OptimizeLlm, AMissingKeyStopsTheRunAtStart) {
  FakeModelServer server;
  unsetenv("KA_TEST_LLM_KEY");
  const auto result = optimize(config("openai", server.endpoint()), 3);
  EXPECT_EQ(result.exit_code, 2) << result.output;  // an input error, not "no candidate passed"
  EXPECT_EQ(result.output.find("1/3]"), std::string::npos) << "no candidate was spent\n"
                                                           << result.output;
  EXPECT_NE(result.output.find("KA_TEST_LLM_KEY"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("is not set or empty"), std::string::npos) << result.output;
  EXPECT_TRUE(server.requests().empty());
}

// Issue 25, item 5: a model the server does not know (404) stops the run at its first request
// instead of failing every candidate the same way.
TEST_F(OptimizeLlm, AnUnknownModelStopsTheRun) {
  FakeModelServer server;
  server.script(
      {{404, R"({"error": {"message": "The model `test-model` does not exist"}})", {}, 0}});
  const auto result = optimize(config("openai", server.endpoint()), 3, "--synthesis-parallel 1");
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("does not exist"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("the run stops"), std::string::npos) << result.output;
  EXPECT_EQ(server.requests().size(), 1u);
}

// With requests out together, the first answer that shows the configuration unusable stops the
// run; what was already sent is all the server gets (a request each, no retry of the refusal).
TEST_F(OptimizeLlm, AnUnknownModelStopsARunWithRequestsOutTogether) {
  FakeModelServer server;
  const ScriptedReply refused{
      404, R"({"error": {"message": "The model `test-model` does not exist"}})", {}, 0};
  server.script({refused, refused, refused, refused});
  const auto result = optimize(config("openai", server.endpoint()), 3, "--synthesis-parallel 3");
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("the run stops"), std::string::npos) << result.output;
  EXPECT_GE(server.requests().size(), 1u);
  EXPECT_LE(server.requests().size(), 3u);
}

/// A program that does not compile.
std::string broken_answer() {
  return "```cpp main.cpp\n#include <kernelarc/abi.h>\nextern \"C\" int ka_run( {\n```\n";
}

// Issue 25, item 4: a replay of a run that had failures (compile errors and a kernel that fails
// at run time) asks the cache for every request of the same search and gets the same
// candidates, with the server gone, in the same workspace (so candidate ids differ).
TEST_F(OptimizeLlm, AReplayOfARunWithFailuresReproducesItsCandidates) {
  std::vector<std::string> recorded;
  std::string endpoint;  // part of the cache key: the replay names the same (now dead) server
  {
    FakeModelServer server;
    endpoint = server.endpoint();
    server.script({{200, openai_answer(broken_answer()), {}, 0},
                   {200, openai_answer(key_reading_answer()), {}, 0},
                   {200, openai_answer(optimized_answer()), {}, 0},
                   {200, openai_answer(broken_answer() + "\n"), {}, 0},
                   {200, openai_answer(optimized_answer() + "\n"), {}, 0}});
    const auto result = optimize(config("openai", server.endpoint()), 5, "--seed 7");
    ASSERT_EQ(result.exit_code, 0) << result.output;
    recorded = programs();
  }
  ASSERT_EQ(recorded.size(), 5u);
  int failed = 0;
  for (const std::string& program : recorded) failed += program.starts_with("failed: ");
  const auto replay =
      optimize(config("openai", endpoint), 5,
               "--seed 7 --llm-replay --llm-cache " + (dir_ / "ws/llm-cache").string());
  ASSERT_EQ(replay.exit_code, 0) << replay.output;
  EXPECT_EQ(programs(), recorded) << replay.output;
  for (const std::string& reason : failures())
    EXPECT_EQ(reason.find("not in the replay cache"), std::string::npos) << reason;
  EXPECT_EQ(failed, 0) << "every answer here holds a program; failures come from the guard";
}

}  // namespace

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

#include "cli/cli_test_support.h"
#include "llm/fake_model_server.h"
#include "store/workspace.h"

namespace {

namespace fs = std::filesystem;
using kernelarc::testing::anthropic_answer;
using kernelarc::testing::DeadPort;
using kernelarc::testing::FakeModelServer;
using kernelarc::testing::openai_answer;
using kernelarc::testing::ScriptedReply;
const fs::path kSource = KERNELARC_SOURCE_DIR;
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

  CommandResult optimize(const fs::path& llm_config, int budget) {
    return run("optimize " + (kSource / "problems/cpu/rmsnorm_f32").string() +
               " --synth llm --llm-config " + llm_config.string() + " --agents 1 --budget " +
               std::to_string(budget) + " --workspace " + (dir_ / "ws").string() +
               " --workloads 9f5092c6 --trials 1 --warmup 1 --iterations 5 --timing-budget 0.1"
               " --final-top 2 --final-rounds 1 --no-skills --plain");
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
  const auto result = optimize(config("openai", server.endpoint()), 8);
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

}  // namespace
